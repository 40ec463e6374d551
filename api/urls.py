"""/api/v1/: one router over the routes each api/<area>/urls.py lists."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from api.accounting.urls import routes as accounting_routes
from api.brokerage.urls import routes as brokerage_routes
from api.classads.urls import routes as classads_routes
from api.core.urls import routes as config_routes
from api.core.views import ObtainTokenView
from api.matcher.urls import routes as matcher_routes
from api.monitoring.urls import routes as monitoring_routes
from api.notifications.urls import routes as notifications_routes
from api.pilots.urls import routes as pilots_routes
from api.shares.urls import routes as shares_routes
from api.timeouts.urls import routes as timeouts_routes

# The pilots' routes first: /match/ is the busiest endpoint, and URLs resolve in this order.
routes = [
    *pilots_routes,
    *matcher_routes,
    *shares_routes,
    *brokerage_routes,
    *classads_routes,
    *timeouts_routes,
    *notifications_routes,
    *monitoring_routes,
    *accounting_routes,
    *config_routes,
]


router = DefaultRouter()
for prefix, viewset, basename in routes:
    router.register(prefix, viewset, basename=basename)
urlpatterns = [
    path("auth/token/", ObtainTokenView.as_view(), name="api-token"),
    *router.urls,
]
