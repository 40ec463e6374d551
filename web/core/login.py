"""The login page and the admin's login, through the failed-login throttle (core/throttling.py).

A refused attempt shows why and when to come back, and the page answers 429 with Retry-After.
"""

from __future__ import annotations

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from core import throttling


class ThrottledLoginMixin:
    """AuthenticationForm.clean, with the password checked through the throttle."""

    retry_after: int | None = None

    def clean(self):
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username is not None and password:
            try:
                self.user_cache = throttling.authenticate(self.request, username, password)
            except throttling.LoginsRefused as refused:
                self.retry_after = refused.seconds
                raise ValidationError(refused.message, code="throttled") from None
            if self.user_cache is None:
                raise self.get_invalid_login_error()
            self.confirm_login_allowed(self.user_cache)
        return self.cleaned_data


class LoginForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class AdminLoginForm(ThrottledLoginMixin, AdminAuthenticationForm):
    pass


class LoginView(auth_views.LoginView):
    authentication_form = LoginForm

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.retry_after is not None:
            response.status_code = 429
            response["Retry-After"] = str(form.retry_after)
        return response
