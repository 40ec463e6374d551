import binascii
from base64 import b64decode

from django.core.exceptions import ValidationError as ModelValueError
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination

TRUE = ("true", "1", "yes")


class DefaultCursorPagination(CursorPagination):
    """Cursor pagination: no COUNT over millions of jobs, stable under inserts. A client that
    wants the total asks for it (`count=true`): one COUNT of what the filters select, every
    page it asks it on. A cursor that is not one of ours is a bad parameter (400 naming
    `cursor`), not a missing page."""

    ordering = "-id"
    page_size_query_param = "page_size"
    max_page_size = 500
    count_query_param = "count"

    def paginate_queryset(self, queryset, request, view=None):
        self.count = None
        flag = request.query_params.get(self.count_query_param)
        if flag is not None and flag.lower() not in (*TRUE, "false", "0", "no", ""):
            raise ValidationError({self.count_query_param: ["Must be true or false."]})
        try:
            page = super().paginate_queryset(queryset, request, view)
        except (ValueError, TypeError, ModelValueError):
            # A well-formed cursor whose position the ordering column cannot hold (a text
            # where the column is a number) was not written by us.
            if request.query_params.get(self.cursor_query_param) is None:
                raise
            raise self._invalid() from None
        if flag is not None and flag.lower() in TRUE:
            self.count = queryset.count()
        return page

    def _invalid(self) -> ValidationError:
        return ValidationError({self.cursor_query_param: [self.invalid_cursor_message]})

    def decode_cursor(self, request):
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is not None:
            try:  # strictly: the framework's decoder skips what is not base64
                b64decode(encoded.encode("ascii"), validate=True)
            except (binascii.Error, UnicodeEncodeError, ValueError):
                raise self._invalid() from None
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise self._invalid() from None
        if cursor is not None and cursor.position is not None and "\x00" in cursor.position:
            raise self._invalid()
        return cursor

    def get_paginated_response(self, data):
        response = super().get_paginated_response(data)
        if self.count is not None:
            response.data = {"count": self.count, **response.data}
        return response

    def get_paginated_response_schema(self, schema):
        schema = super().get_paginated_response_schema(schema)
        schema["properties"] = {
            "count": {
                "type": "integer",
                "description": "How many rows the filters select in all; only with `count=true`.",
                "example": 123,
            },
            **schema["properties"],
        }
        return schema

    def get_schema_operation_parameters(self, view):
        return [
            *super().get_schema_operation_parameters(view),
            {
                "name": self.count_query_param,
                "required": False,
                "in": "query",
                "description": "true: the answer adds `count`, how many rows the filters select "
                "in all (one more query).",
                "schema": {"type": "boolean"},
            },
        ]
