"""/api/v1/: one router for the routes every app declares in its api/urls.py."""

from django.urls import path
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from brokerage.api.urls import routes as brokerage_routes
from classads.api.urls import routes as classads_routes
from config.api import views as api_views
from matcher.api.urls import routes as matcher_routes
from shares.api.urls import routes as shares_routes

routes = [
    *matcher_routes,
    *shares_routes,
    *brokerage_routes,
    *classads_routes,
    ("config", api_views.ParameterViewSet, "parameter"),
    ("cycles", api_views.CycleRunViewSet, "cyclerun"),
]

router = DefaultRouter()
for prefix, viewset, basename in routes:
    router.register(prefix, viewset, basename=basename)
urlpatterns = [
    path("auth/token/", obtain_auth_token, name="api-token"),
    *router.urls,
]
