"""The project's own request handling around every view: who may see a page, how big a request
may be, and a database that cannot be reached (settings.MIDDLEWARE)."""

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware as _LoginRequired
from django.http import JsonResponse

from core.db import connection_failure
from sandboxes import services as sandboxes
from sandboxes.uploads import FilesNotKept, drain
from web.core.error_pages import database_unavailable


class LoginRequiredMiddleware(_LoginRequired):
    """Anonymous visitors see only the login page. The API answers for itself (401; its
    description, /api/schema/ and its viewers, is public: a generated client reads it before it
    has a token), and static files and the admin's own login stay reachable."""

    exempt_prefixes = ("/api/", "/static/", "/admin/login/")

    def process_view(self, request, view_func, view_args, view_kwargs):
        path = request.path
        if path.startswith(self.exempt_prefixes):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


UPLOAD_PREFIX = "/api/v1/jobs/"  # where multipart bodies carry files (jobs' sandboxes)
UPLOAD_PAGES = ("/jobs/submit/",)  # the pages whose forms carry sandbox files
SUBMISSION = "/api/v1/jobs/"


class RequestSizeLimitMiddleware:
    """Refuse a request whose declared body is over settings.REQUEST_MAX_BYTES with 413, before
    anything reads it (DRF reads API bodies itself, past Django's DATA_UPLOAD_MAX_MEMORY_SIZE).
    A sandbox upload's 413 names the sandbox's parameter as its view would. A page's form with
    files over the limit is not refused here: its files are read through and dropped
    (sandboxes.uploads.FilesNotKept, `request.files_not_kept`), and the page says so next to
    its file field.

    The refused body is read through and dropped (sandboxes.uploads.drain), so that a client
    sending all of it before reading the answer gets the 413. No `Connection: close`: a WSGI
    application may not send hop-by-hop headers (PEP 3333; the development server's wsgiref
    turns one into a 500)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _too_big(request, "Content-Length is not a number", 400)
        limit, name = settings.REQUEST_MAX_BYTES, "REQUEST_MAX_BYTES"
        multipart = request.META.get("CONTENT_TYPE", "").startswith("multipart/form-data")
        page = multipart and request.path in UPLOAD_PAGES
        if multipart and (request.path.startswith(UPLOAD_PREFIX) or page):
            # Sandbox files stream to disk; each view holds them to its own limit. Pages'
            # other forms stay under REQUEST_MAX_BYTES.
            limit, name = getattr(settings, "UPLOAD_MAX_BYTES", limit), "UPLOAD_MAX_BYTES"
        if length <= limit:
            return self.get_response(request)
        if page:
            request.upload_handlers = [FilesNotKept(request)]
            request.files_not_kept = request.upload_handlers[0]
            return self.get_response(request)
        message = f"request body of {length} bytes is over the limit of {limit} bytes ({name})"
        body: dict = {"detail": message}
        if multipart and request.path == SUBMISSION:
            body["input_sandbox"] = [sandboxes.input_over_limit(length)]
        elif multipart and request.path.startswith(UPLOAD_PREFIX) and "/output/" in request.path:
            body["output"] = [sandboxes.output_over_limit(length)]
            body["limit"] = sandboxes.output_budget()
        drain(request, length)
        return JsonResponse(body, status=413)


def _too_big(request, message: str, status: int) -> JsonResponse:
    return JsonResponse({"detail": message}, status=status)


class DatabaseUnavailableMiddleware:
    """A view that cannot reach the database answers 503 with Retry-After (JSON under /api/),
    in development too. A query error stays a 500. Failures in other middleware (the session
    and user) are sorted by the 500 handler, web.core.error_pages.server_error."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if connection_failure(exception):
            return database_unavailable(request)
        return None
