"""/api/v1/: one router for the routes every app declares in its api/urls.py."""

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
from api.pilots.urls import extends as pilots_extends
from api.pilots.urls import routes as pilots_routes
from api.sandboxes.urls import extends as sandboxes_extends
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


def _extended(prefix: str, viewset: type) -> type:
    """The viewset with the actions other apps add to its collection (an app above the one
    that owns it: the pilots' job reports on the matcher's jobs, the sandboxes' files)."""
    mixins = [extra[prefix] for extra in (pilots_extends, sandboxes_extends) if prefix in extra]
    return type(viewset.__name__, (*mixins, viewset), {}) if mixins else viewset


router = DefaultRouter()
for prefix, viewset, basename in routes:
    router.register(prefix, _extended(prefix, viewset), basename=basename)
urlpatterns = [
    path("auth/token/", ObtainTokenView.as_view(), name="api-token"),
    *router.urls,
]
