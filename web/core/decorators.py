from functools import wraps

from django.core.exceptions import PermissionDenied


def staff_required(view):
    """Staff only: anonymous visitors have already been sent to the login page by the
    middleware; a logged-in user who is not staff gets 403."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_staff:
            raise PermissionDenied("staff only")
        return view(request, *args, **kwargs)

    return wrapper
