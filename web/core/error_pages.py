"""The project's own error pages (DEBUG off): nothing about the code, the URL patterns or the
settings, just what went wrong in the visitor's terms. Under /api/ the answer is JSON, as the
rest of the API's."""

import sys
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.template import loader
from django.utils.http import url_has_allowed_host_and_scheme

from core.db import connection_failure

MESSAGES = {
    400: "Bad request.",
    403: "You do not have permission to do this.",
    404: "Not found.",
    500: "Server error: the operators have been told.",
}
CSRF_MESSAGE = (
    "Your form expired or your browser blocks cookies for this site: reload the page and try again."
)
UNAVAILABLE = "the database is unavailable; retry later"


def _api(request) -> bool:
    return request.path.startswith("/api/")


def _page(request, status: int, context: dict | None = None):
    if _api(request):
        return JsonResponse({"detail": MESSAGES[status]}, status=status)
    body = loader.render_to_string(f"{status}.html", context or {}, request=request)
    return HttpResponse(body, status=status)


def back_link(request) -> str:
    """The Referer as a relative path on this site, for a Back link; "" when it names another
    site or scheme (a link on our page must not lead a visitor there) or is missing."""
    referer = request.META.get("HTTP_REFERER", "")
    same_site = url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    if not same_site:
        return ""
    parts = urlsplit(referer)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    # "//other.site/" as a path would be read by the browser as another host.
    relative = path.startswith("/") and url_has_allowed_host_and_scheme(path, allowed_hosts=None)
    return path if relative else ""


def bad_request(request, exception=None):
    return _page(request, 400)


def permission_denied(request, exception=None):
    return _page(request, 403, {"exception": str(exception or ""), "back": back_link(request)})


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: the framed 403 page saying what to do, not Django's bare one (the
    technical reason is in django.security.csrf's log)."""
    if _api(request):
        return JsonResponse({"detail": CSRF_MESSAGE}, status=403)
    return _page(request, 403, {"exception": CSRF_MESSAGE, "back": back_link(request)})


def not_found(request, exception=None):
    return _page(request, 404, {"path": request.path})


def server_error(request):
    """No context processors and no database: whatever failed may fail again."""
    # Failures in middleware (the session or user loaded from a database that refuses) reach
    # only this handler: sort them here.
    if connection_failure(sys.exc_info()[1]):
        return database_unavailable(request)
    if _api(request):
        return JsonResponse({"detail": MESSAGES[500]}, status=500)
    return HttpResponse(loader.get_template("500.html").render(), status=500)


def retry_after() -> str:
    return str(settings.DB_RETRY_AFTER)


def database_unavailable(request):
    """503 with Retry-After: JSON under /api/, else the framed page, rendered without the
    request (no context processors: no user, session or messages, all in the database)."""
    if _api(request):
        response = JsonResponse({"detail": UNAVAILABLE}, status=503)
    else:
        response = HttpResponse(loader.render_to_string("503.html"), status=503)
    response["Retry-After"] = retry_after()
    return response
