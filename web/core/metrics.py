"""GET /metrics: readable by staff (token or session) and by the addresses in
METRICS_ALLOWED_ADDRESSES; and the timing of every request. The figures themselves are
core/metrics.py's."""

from __future__ import annotations

import ipaddress
import time

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from core import metrics as core_metrics


class RequestMetricsMiddleware:
    """Times each request; the route is the URL pattern (bounded), not the path."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = request.resolver_match
        # The pattern, not the path (bounded), without the router's regex anchors.
        route = match.route.replace("^", "").replace("$", "") if match else "<unmatched>"
        core_metrics.observe_request(
            request.method, route, response.status_code, time.perf_counter() - started
        )
        return response


def address_allowed(address: str) -> bool:
    """Whether the caller's address is in METRICS_ALLOWED_ADDRESSES (networks or addresses)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(
        ip in ipaddress.ip_network(net, strict=False) for net in settings.METRICS_ALLOWED_ADDRESSES
    )


def caller_is_staff(request) -> bool | None:
    """True for a staff session or token, False for another user, None for nobody."""
    from rest_framework.authentication import TokenAuthentication
    from rest_framework.exceptions import AuthenticationFailed

    user = request.user if request.user.is_authenticated else None
    if user is None:
        try:
            found = TokenAuthentication().authenticate(request)
        except AuthenticationFailed:
            found = None
        user = found[0] if found else None
    return None if user is None else user.is_staff


@login_not_required
@never_cache
@require_GET
def metrics(request):
    if not address_allowed(request.META.get("REMOTE_ADDR", "")):
        staff = caller_is_staff(request)
        if not staff:
            response = HttpResponse(
                "metrics are for staff tokens and the addresses in METRICS_ALLOWED_ADDRESSES\n",
                status=401 if staff is None else 403,
                content_type="text/plain",
            )
            if staff is None:
                response["WWW-Authenticate"] = "Token"
            return response
    return HttpResponse(core_metrics.scrape(), content_type=CONTENT_TYPE_LATEST)
