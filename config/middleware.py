from django.contrib.auth.middleware import LoginRequiredMiddleware as _LoginRequired

# The schema and its viewers are for signed-in people: a browser goes to the login page and
# comes back; a program asking for the schema gets the API's 401.
API_DOCS = ("/api/docs/", "/api/redoc/")
API_SCHEMA = "/api/schema/"


def wants_html(request) -> bool:
    return "text/html" in request.headers.get("Accept", "")


class LoginRequiredMiddleware(_LoginRequired):
    """Anonymous visitors see only the login page. The API answers for itself (401), and
    static files and the admin's own login stay reachable."""

    exempt_prefixes = ("/api/", "/static/", "/admin/login/")

    def process_view(self, request, view_func, view_args, view_kwargs):
        path = request.path
        if path.startswith(API_DOCS) or (path.startswith(API_SCHEMA) and wants_html(request)):
            # DRF's views opt out of this middleware (login_required = False): decide here.
            if request.user.is_authenticated:
                return None
            return self.handle_no_permission(request, view_func)
        if path.startswith(self.exempt_prefixes):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
