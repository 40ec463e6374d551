from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

urlpatterns = [
    path(
        "favicon.ico",
        login_not_required(RedirectView.as_view(url=static("img/favicon.svg"), permanent=True)),
    ),
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    # Namespaced: the API root lists the API's own routes, not the pages of the same names.
    path("api/v1/", include(("config.api.urls", "api"), namespace="api")),
    path("config/", include("config.urls_pages")),
    path("shares/", include("shares.urls")),
    path("brokerage/", include("brokerage.urls")),
    path("simulation/", include("simulation.urls")),
    path("classads/", include("classads.urls")),
    path("", include("matcher.urls")),
]
