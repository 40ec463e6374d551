from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import ProtectedError, RestrictedError
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.db import connection_failure
from core.gdpconfig import ConfigError
from web.core.error_pages import UNAVAILABLE, retry_after


def exception_handler(exc, context):
    """DRF's handler, plus domain errors: 400s that name the offending field, and 409 for
    deleting what other records still need (a group with jobs, say), and 503 with Retry-After
    when the database refuses or loses the connection (a query error stays a 500)."""
    if connection_failure(exc):
        return Response(
            {"detail": UNAVAILABLE},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": retry_after()},
        )
    if isinstance(exc, (ProtectedError, RestrictedError)):
        kinds = sorted({str(type(o)._meta.verbose_name_plural) for o in list(exc.args[1])[:1000]})
        return Response(
            {"detail": f"still in use by {', '.join(kinds)}: it cannot be deleted"},
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, ConfigError):
        exc = ValidationError({exc.field: [exc.message]})
    elif isinstance(exc, DjangoValidationError):
        exc = ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    return drf_exception_handler(exc, context)
