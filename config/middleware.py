from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware as _LoginRequired
from django.http import JsonResponse


class LoginRequiredMiddleware(_LoginRequired):
    """Anonymous visitors see only the login page. The API answers for itself (401/403), and
    static files and the admin's own login stay reachable."""

    exempt_prefixes = ("/api/", "/static/", "/admin/login/")

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path.startswith(self.exempt_prefixes):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class RequestSizeLimitMiddleware:
    """Refuse a request whose declared body is over settings.REQUEST_MAX_BYTES with 413, before
    anything reads it (DRF reads API bodies itself, past Django's DATA_UPLOAD_MAX_MEMORY_SIZE).
    The connection is closed: the unread body must not be taken for the next request."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _too_big(request, "Content-Length is not a number", 400)
        limit = settings.REQUEST_MAX_BYTES
        if length > limit:
            return _too_big(
                request,
                f"request body of {length} bytes is over the limit of {limit} bytes "
                "(REQUEST_MAX_BYTES)",
                413,
            )
        return self.get_response(request)


def _too_big(request, message: str, status: int) -> JsonResponse:
    response = JsonResponse({"detail": message}, status=status)
    response["Connection"] = "close"
    return response
