"""The project's own error pages (DEBUG off): nothing about the code, the URL patterns or the
settings, just what went wrong in the visitor's terms. Under /api/ the answer is JSON, as the
rest of the API's."""

from django.http import HttpResponse, JsonResponse
from django.template import loader

MESSAGES = {
    400: "Bad request.",
    403: "You do not have permission to do this.",
    404: "Not found.",
    500: "Server error: the operators have been told.",
}


def _api(request) -> bool:
    return request.path.startswith("/api/")


def _page(request, status: int, context: dict | None = None):
    if _api(request):
        return JsonResponse({"detail": MESSAGES[status]}, status=status)
    body = loader.render_to_string(f"{status}.html", context or {}, request=request)
    return HttpResponse(body, status=status)


def bad_request(request, exception=None):
    return _page(request, 400)


def permission_denied(request, exception=None):
    return _page(request, 403)


def not_found(request, exception=None):
    return _page(request, 404, {"path": request.path})


def server_error(request):
    """No context processors and no database: whatever failed may fail again."""
    if _api(request):
        return JsonResponse({"detail": MESSAGES[500]}, status=500)
    return HttpResponse(loader.get_template("500.html").render(), status=500)
