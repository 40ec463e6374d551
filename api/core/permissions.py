"""DRF permission classes of the API."""

from rest_framework.permissions import SAFE_METHODS, BasePermission


class StaffWriteOrReadOnly(BasePermission):
    """Authenticated users read; staff write."""

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or user.is_staff


class StaffOnly(BasePermission):
    def has_permission(self, request, view):
        return bool(request.user and request.user.is_staff)
