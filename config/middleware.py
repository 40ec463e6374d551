from django.contrib.auth.middleware import LoginRequiredMiddleware as _LoginRequired


class LoginRequiredMiddleware(_LoginRequired):
    """Anonymous visitors see only the login page. The API answers for itself (401/403), and
    static files and the admin's own login stay reachable."""

    exempt_prefixes = ("/api/", "/static/", "/admin/login/")

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path.startswith(self.exempt_prefixes):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
