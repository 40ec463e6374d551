"""JSON in and out of the API with orjson: bounded on the way in, fast both ways.

In: a body nested deeper than MAX_DEPTH levels is refused with 400 before anything walks it
(Python's json module recursed until RecursionError, a 500, at 5,000 levels; orjson itself
stops at 1,024, deeper than our serializers or a JSONField's encoder may safely recurse). A body
over settings.REQUEST_MAX_BYTES never gets here (web.core.middleware: 413).
Out: the same JSON as DRF's renderer (datetimes, decimals, lazy strings through DRF's encoder),
in a fraction of the time; DRF's renderer is the fallback for what orjson refuses.
"""

from __future__ import annotations

import orjson
from rest_framework.exceptions import ParseError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

MAX_DEPTH = 64


def depth_exceeds(data, limit: int = MAX_DEPTH) -> bool:
    """Whether a parsed document nests lists and objects deeper than `limit` (iterative)."""
    todo = [(data, 1)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, list):
            continue
        if depth > limit:
            return True
        todo.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))
    return False


class OrjsonParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read()
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        if encoding.lower().replace("-", "") != "utf8":
            try:
                raw = raw.decode(encoding)
            except (LookupError, UnicodeDecodeError) as exc:
                raise ParseError(f"JSON parse error - not {encoding} text: {exc}") from None
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if str(exc).startswith("depth limit exceeded"):
                raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
            raise ParseError(f"JSON parse error - {exc}") from None
        if depth_exceeds(data):
            raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels")
        return data


_drf_default = JSONEncoder().default
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME


class OrjsonRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        options = _OPTIONS
        if self.get_indent(accepted_media_type, renderer_context or {}):
            options |= orjson.OPT_INDENT_2
        try:
            return orjson.dumps(data, default=_drf_default, option=options)
        except (orjson.JSONEncodeError, TypeError):
            # Integers beyond 64 bits, say: DRF's own renderer knows them.
            return super().render(data, accepted_media_type, renderer_context)


class JsonOnlyNegotiation(DefaultContentNegotiation):
    """For endpoints that answer JSON only (the pilots' match): no Accept header to weigh."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type
