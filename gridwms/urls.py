from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from config import health, metrics, refresh
from config.login import LoginView


class FaviconRedirect(RedirectView):
    # Resolved per request, not when the URLconf is imported: in production the name comes from
    # collectstatic's manifest (a URLconf that fails to import would fail every request).
    def get_redirect_url(self, *args, **kwargs):
        return static("img/favicon.svg")


handler400 = "config.error_pages.bad_request"
handler403 = "config.error_pages.permission_denied"
handler404 = "config.error_pages.not_found"
handler500 = "config.error_pages.server_error"

urlpatterns = [
    path("favicon.ico", login_not_required(FaviconRedirect.as_view(permanent=True))),
    path("healthz", health.healthz, name="healthz"),
    path("metrics", metrics.metrics, name="metrics"),
    # First: the pilots' requests resolve fast. Namespaced: the API root lists the API's own
    # routes, not the pages of the same names.
    path("api/v1/", include(("gridwms.api_urls", "api"), namespace="api")),
    path("admin/", admin.site.urls),
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    path("config/", include("config.urls")),
    path("shares/", include("shares.urls")),
    path("brokerage/", include("brokerage.urls")),
    path("brokerage/timeouts/", include("timeouts.urls")),
    path("simulation/", include("simulation.urls")),
    path("classads/", include("classads.urls")),
    path("pilots/", include("pilots.urls")),
    path("notifications/", include("notifications.urls")),
    path("accounting/", include("accounting.urls")),
    path("monitoring/", include("monitoring.urls")),
    path("", include("matcher.urls")),
]

# The monitoring pages offer an auto-refresh toggle (off by default, every 30 s).
refresh.register(
    "home",
    "job-list",
    "taskqueue-list",
    "site-list",
    "pilot-list",
    "director",
    "task-list",
    "decision-list",
    "timeouts",
    "timeout-actions",
    "cycle-runs",
    "group-list",
    "classads:site-ad-list",
    "classads:job-ad-list",
    "classads:negotiation",
    "accounting",
)
