"""What DiracX's clients get when a request is refused: `{"detail": "<field>: <why>"}`, the shape
FastAPI's HTTPException gives DiracX's own server, with the field named first."""

from __future__ import annotations

from datetime import datetime

from django.utils.dateparse import parse_datetime
from rest_framework import status
from rest_framework.response import Response


class DiracxError(Exception):
    """A request refused: `field` names what was wrong (a JDL attribute, a body path)."""

    def __init__(self, field: str, message: str, answer: int = status.HTTP_400_BAD_REQUEST):
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message
        self.status = answer

    def response(self) -> Response:
        return Response({"detail": str(self)}, status=self.status)


def text(value, field: str, max_length: int | None = None) -> str:
    """A string of the body: a string, with no NUL (PostgreSQL text cannot hold one), within
    `max_length` characters."""
    if not isinstance(value, str):
        raise DiracxError(field, "must be a string")
    if "\x00" in value:
        raise DiracxError(field, "must not hold a NUL character")
    if max_length is not None and len(value) > max_length:
        raise DiracxError(field, f"{len(value)} characters; at most {max_length}")
    return value


def moment(value, field: str) -> datetime:
    """An ISO 8601 date and time of the body (a date past its month's end is not one)."""
    try:
        parsed = parse_datetime(text(value, field, 64))
    except ValueError:
        parsed = None
    if parsed is None:
        raise DiracxError(field, "not an ISO 8601 date and time")
    return parsed
