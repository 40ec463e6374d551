"""multipart/form-data with the file names as sent: Django keeps only a name's last component
(its parser and UploadedFile both) and drops the files named "." or "..", silently. A
sandbox's output files are relative paths ("sub/result.txt"), and a bad name must be refused
naming its part, never dropped or changed: the services check every name
(sandboxes.services.check_inputs, output_name) as `sandboxes.uploads.sent_name(upload)`
gives it."""

from __future__ import annotations

import html
from urllib.parse import quote, unquote

from django.http.multipartparser import MultiPartParser as DjangoMultiPartParser
from django.http.multipartparser import MultiPartParserError
from rest_framework.exceptions import ParseError
from rest_framework.parsers import DataAndFiles, MultiPartParser

# A name Django would cut (over 255 characters once quoted): carried with a NUL, which every
# check refuses.
PREFIX = "f-"
TOO_LONG = quote("\x00 (a file name too long)", safe="")


class _KeepNames(DjangoMultiPartParser):
    def sanitize_file_name(self, file_name):
        # Quoted, the name has no "/" for Django to cut, and behind a prefix "." and ".." are
        # names like others (sent_name undoes both).
        quoted = PREFIX + quote(html.unescape(file_name), safe="")
        return quoted if len(quoted) <= 255 else PREFIX + TOO_LONG


class _Tail:
    """The stream, keeping the last bytes read."""

    KEEP = 512

    def __init__(self, stream):
        self.stream, self.tail = stream, b""

    def read(self, *args):
        chunk = self.stream.read(*args)
        self.tail = (self.tail + chunk)[-self.KEEP :]
        return chunk

    def ends_with_boundary(self, media_type: str) -> bool:
        boundary = ""
        for param in media_type.split(";")[1:]:
            key, _, value = param.strip().partition("=")
            if key.lower() == "boundary":
                boundary = value.strip('"')
        return bool(boundary) and self.tail.rstrip(b"\r\n").endswith(f"--{boundary}--".encode())


class SandboxMultiPartParser(MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        request = parser_context["request"]
        meta = request.META.copy()
        meta["CONTENT_TYPE"] = media_type
        encoding = parser_context.get("encoding") or "utf-8"
        recorded = _Tail(stream)
        try:
            parser = _KeepNames(meta, recorded, request.upload_handlers, encoding)
            data, files = parser.parse()
        except MultiPartParserError as exc:
            raise ParseError(f"Multipart form parse error - {exc}") from None
        if not recorded.ends_with_boundary(media_type or ""):
            # Django takes a body cut short (a client that died mid-upload) for a whole one.
            raise ParseError("Multipart form parse error - the body ends before its last boundary")
        for _field, upload in files.lists() if hasattr(files, "lists") else []:
            for one in upload:
                one.sent_name = unquote(one.name.removeprefix(PREFIX))
        return DataAndFiles(data, files)


def with_suffix(name: str | None, suffix: str | None) -> str:
    """The file's name: the router reads a name's extension as a format suffix."""
    return f"{name}.{suffix}" if suffix else name or ""
