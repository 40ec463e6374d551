from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.exceptions import ValidationError
from rest_framework.views import exception_handler as drf_exception_handler

from config.gdpconfig import ConfigError


def exception_handler(exc, context):
    """DRF's handler, plus domain errors turned into 400s that name the offending field."""
    if isinstance(exc, ConfigError):
        exc = ValidationError({exc.field: [exc.message]})
    elif isinstance(exc, DjangoValidationError):
        exc = ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    return drf_exception_handler(exc, context)
