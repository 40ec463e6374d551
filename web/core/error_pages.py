"""The project's own error pages (DEBUG off): nothing about the code, the URL patterns or the
settings, just what went wrong in the visitor's terms. Under /api/ the answer is JSON, as the
rest of the API's."""

import sys
from urllib.parse import urlsplit

import psycopg
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import HttpResponse, JsonResponse
from django.template import loader
from django.utils.http import url_has_allowed_host_and_scheme

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

# SQLSTATEs of a failed connection rather than a failed statement: class 08 (connection
# exception), too many connections, and 57P0x: the session ended by an administrator, a crash,
# a server still starting, its database dropped or its idle timeout.
_CONNECTION_STATES = ("08", "53300", "57P0")
_CONNECT = getattr(BaseDatabaseWrapper.connect, "__wrapped__", BaseDatabaseWrapper.connect).__code__


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


def connection_failure(exc: BaseException | None) -> bool:
    """The database refused or lost the connection (server down, full, shutting down or
    restarted, unreachable, the pool exhausted): a 503 to retry. The one test of it, for errors
    from Django's cursors and from psycopg's own (the matcher's prepared statements run on a
    raw cursor, unwrapped). A failed statement, even an OperationalError (a deadlock, a
    timeout, a serialization failure), is not: it stays a 500, a bug to see."""
    if isinstance(exc, (OperationalError, InterfaceError)):  # Django's, the driver's as cause
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is _CONNECT:  # raised while connecting, whatever the backend
                return True
            tb = tb.tb_next
        driver = exc.__cause__
        if driver is None or not hasattr(driver, "sqlstate"):
            # An error without a SQLSTATE (none from the server) is not a lost connection.
            return False
        return _driver_connection_failure(driver)
    return _driver_connection_failure(exc)


def _driver_connection_failure(exc: BaseException | None) -> bool:
    """psycopg's error: one with a connection SQLSTATE, or the client's own OperationalError
    (no SQLSTATE: the socket closed under it, the pool had no connection to give)."""
    if not isinstance(exc, psycopg.Error):
        return False
    if exc.sqlstate is None:
        return isinstance(exc, psycopg.OperationalError)
    return connection_sqlstate(exc.sqlstate)


def connection_sqlstate(state: str) -> bool:
    """Whether a SQLSTATE says the connection failed, not the statement."""
    return state.startswith(_CONNECTION_STATES)


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
