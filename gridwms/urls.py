from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.decorators.cache import cache_page
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from web.core import health, metrics
from web.core.login import LoginView


class FaviconRedirect(RedirectView):
    # Resolved per request, not when the URLconf is imported: in production the name comes from
    # collectstatic's manifest (a URLconf that fails to import would fail every request).
    def get_redirect_url(self, *args, **kwargs):
        return static("img/favicon.svg")


handler400 = "web.core.error_pages.bad_request"
handler403 = "web.core.error_pages.permission_denied"
handler404 = "web.core.error_pages.not_found"
handler500 = "web.core.error_pages.server_error"

urlpatterns = [
    path("favicon.ico", login_not_required(FaviconRedirect.as_view(permanent=True))),
    path("healthz", health.healthz, name="healthz"),
    path("metrics", metrics.metrics, name="metrics"),
    # PanDA's client's job API (job/..., system/...: no gridwms route has those names).
    path("api/v1/", include("api.panda_client.urls")),
    # First: the pilots' requests resolve fast. Namespaced: the API root lists the API's own
    # routes, not the pages of the same names.
    path("api/v1/", include(("api.urls", "api"), namespace="api")),
    # PanDA's pilot, at panda-server's paths (/server/panda/..., /cache/...).
    path("", include("api.panda_pilot.urls")),
    path("admin/", admin.site.urls),
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Public, and the same for everyone: generated once per process and hour, not per request
    # (about a second of CPU each).
    path("api/schema/", cache_page(3600)(SpectacularAPIView.as_view()), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    # DiracX's paths (/.well-known/, /api/jobs/, /api/auth/): its command line works unmodified.
    path("", include("api.diracx.urls")),
    path("config/", include("web.core.urls")),
    path("shares/", include("web.shares.urls")),
    path("brokerage/", include("web.brokerage.urls")),
    path("brokerage/timeouts/", include("web.timeouts.urls")),
    path("simulation/", include("web.simulation.urls")),
    path("classads/", include("web.classads.urls")),
    path("pilots/", include("web.pilots.urls")),
    path("notifications/", include("web.notifications.urls")),
    path("accounting/", include("web.accounting.urls")),
    path("monitoring/", include("web.monitoring.urls")),
    path("", include("web.matcher.urls")),
]
