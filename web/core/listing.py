"""Lists that work like the tools people know: one mechanism for every list page and its API.

A list's FilterSet (a ListFilterSet) declares, besides its column filters:

- `ordering = SortFilter(fields=...)`: the whitelisted columns, sorted server side either way;
  ties are broken by id in the same direction, so every page of a sorted list is stable;
- `q = SearchFilter(ids=..., text=...)`: free text on the natural keys (a whole number is an id,
  anything else part of a name);
- `period, since, until = time_range(field)`: the list's main timestamp within the last
  hour/day/week, or from–to (ISO 8601 instants);
- `export_fields`: the columns of the CSV and JSON export, header → ORM path.

The same FilterSet filters the page and the API. `list_page` renders a page: page size
(`page_size`, 1–500; the form offers PAGE_SIZES), `?format=csv|json` streams the export of
exactly what the filters select, a bad filter answers 400 with the errors shown. The API's
`export/` action (api.core.export.ExportMixin) streams the same export. The sortable column
headers come from the `sort_th` template tag (web/templatetags/listing.py).
"""

from __future__ import annotations

import csv
import datetime
import io
from dataclasses import dataclass
from decimal import Decimal

import django_filters
import orjson
from django import forms
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.forms.utils import ErrorList
from django.http import StreamingHttpResponse
from django.shortcuts import render
from django_filters.constants import EMPTY_VALUES

from core import clock
from web.core.filters import InstantFilter, StrictFilterSet
from web.core.paging import paginate

PAGE_SIZES = (25, 50, 100, 500)
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500  # the API's cursor pagination's bound too
EXPORT_CHUNK = 2000  # rows fetched at a time by an export
EXPORT_BATCH = 500  # rows written at a time
PERIODS = {
    "hour": datetime.timedelta(hours=1),
    "day": datetime.timedelta(days=1),
    "week": datetime.timedelta(weeks=1),
}
FORMATS = ("csv", "json")
MAX_ID = 2**63 - 1
SEARCH_IDS = 1000  # a search's related rows looked up by id at most; more: a subquery


def stable(ordering: list[str]) -> list[str]:
    """The ordering with ties broken by id, in the direction of the first key."""
    ordering = [o for o in ordering if o]
    if not ordering:
        return ordering
    if not any(o.lstrip("-") in ("id", "pk") for o in ordering):
        ordering.append("-id" if ordering[0].startswith("-") else "id")
    return ordering


class SortFilter(django_filters.OrderingFilter):
    """Sort by a whitelisted column (`fields`: ORM path → parameter name), either way, ties
    broken by id in the same direction. A column of a related row (`owner__username`) is
    sorted by an annotation of the row itself (`sort_owner`), which the API's cursor
    pagination can read back from the last row of a page; so is a nullable column, named in
    `nulls` with the value that stands for NULL (the cursor cannot carry a NULL)."""

    def __init__(self, *args, nulls=None, **kwargs):
        kwargs.setdefault("label", "Sort by")
        kwargs.setdefault("empty_label", "default order")
        super().__init__(*args, **kwargs)
        self.nulls = dict(nulls or {})
        self.aliases = {
            p: f"sort_{p}"
            for p, field in self.param_map.items()
            if "__" in field or p in self.nulls
        }

    def _alias_expression(self, param):
        path = F(self.param_map[param])
        if param not in self.nulls:
            return path
        value = self.nulls[param]
        kind = {int: models.BigIntegerField, float: models.FloatField}.get(type(value))
        return Coalesce(path, Value(value), output_field=(kind or models.CharField)())

    def get_ordering_value(self, param):
        name = param.lstrip("-")
        if name in self.aliases:
            return ("-" if param.startswith("-") else "") + self.aliases[name]
        return super().get_ordering_value(param)

    def filter(self, qs, value):
        if value in EMPTY_VALUES:
            return qs
        params = [p for p in value if p not in EMPTY_VALUES]
        used = {p.lstrip("-") for p in params} & set(self.aliases)
        if used:
            qs = qs.annotate(**{self.aliases[p]: self._alias_expression(p) for p in used})
        return qs.order_by(*stable([self.get_ordering_value(p) for p in params]))

    def sort_keys(self) -> set[str]:
        """The parameter names a column header may sort by."""
        return set(self.param_map)


class SearchFilter(django_filters.CharFilter):
    """Free text on a list's natural keys: a whole number matches the `ids` fields exactly (an
    index lookup, not a scan of every name for its digits), other text is looked for,
    case-insensitively, in the `text` fields.

    A field of a related row (`task_job__task_id`, `task_job__task__name`) is matched by the ids
    of the rows it selects, not by a join in the OR: `id = 5 OR <join>.task_id = 5` walked every
    job (a second at 1M), `id IN (5, ...)` is a few index lookups. Text too: a subquery in the OR
    (`name LIKE ... OR id IN (SELECT ...)`) is a filter PostgreSQL applies row by row, walking
    the table, where a list of ids lets it OR the name's trigram index (matcher migration 0017)
    with the primary key's."""

    def __init__(self, *, ids=("id",), text=(), **kwargs):
        self.ids, self.text = tuple(ids), tuple(text)
        kwargs.setdefault("label", "Search")
        kwargs.setdefault("max_length", 200)
        super().__init__(**kwargs)

    def filter(self, qs, value):
        value = (value or "").strip()
        if not value:
            return qs
        q = Q()
        if self.ids and value.isascii() and value.isdigit():
            if int(value) > MAX_ID:
                return qs.none()
            for field in self.ids:
                q |= self._match(qs, field, int(value))
        else:
            for field in self.text:
                q |= self._match(qs, f"{field}__icontains", value)
        return qs.filter(q) if q else qs.none()

    @staticmethod
    def _match(qs, lookup: str, value) -> Q:
        if "__" not in lookup.removesuffix("__icontains"):
            return Q(**{lookup: value})
        rows = qs.model._base_manager.filter(**{lookup: value}).values("pk")
        ids = list(rows.values_list("pk", flat=True)[: SEARCH_IDS + 1])
        return Q(pk__in=ids) if len(ids) <= SEARCH_IDS else Q(pk__in=rows)


class PeriodFilter(django_filters.ChoiceFilter):
    """The last hour, day or week of a timestamp, on the clock the rows are written on."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("choices", [(k, f"last {k}") for k in PERIODS])
        kwargs.setdefault("empty_label", "any time")
        super().__init__(*args, **kwargs)

    def filter(self, qs, value):
        if value in EMPTY_VALUES:
            return qs
        return qs.filter(**{f"{self.field_name}__gte": clock.now() - PERIODS[value]})


def time_range(field: str, label: str):
    """The three filters of a list's time range on `field`: `period` (hour, day, week), and
    `since` / `until` (ISO 8601, from inclusive, to exclusive). Unpack them in the FilterSet:
    `period, since, until = time_range("created", "Submitted")`."""
    text = forms.TextInput(attrs={"placeholder": "YYYY-MM-DDTHH:MMZ", "size": 19})
    return (
        PeriodFilter(field_name=field, label=f"{label} in the"),
        InstantFilter(
            field_name=field, lookup_expr="gte", label=f"{label} from", widget=text,
            help_text="ISO 8601",
        ),
        InstantFilter(
            field_name=field, lookup_expr="lt", label=f"{label} to", widget=text,
            help_text="ISO 8601",
        ),
    )  # fmt: skip


class ListFilterSet(StrictFilterSet):
    """A StrictFilterSet that also names the columns its list exports (header → ORM path)."""

    export_fields: dict[str, str] = {}

    def offer(self, name: str, values) -> None:
        """Show a free-text filter as a choice among `values` (the form only: the API still
        takes any text), keeping a value the URL asks for that is not among them."""
        wanted = (self.data or {}).get(name)
        options = sorted({*values, *([wanted] if wanted else [])})
        self.form.fields[name].widget = forms.Select(
            choices=[("", "any"), *((v, v) for v in options)]
        )

    def reject(self, name: str, message: str) -> None:
        """An error about a parameter the filters do not read (page size, format): the list is
        then invalid and empty, as for any other bad parameter."""
        self.form.errors[name] = ErrorList([message])
        self.__dict__.pop("_qs", None)


# Streaming export -------------------------------------------------------------------------


def cell(value):
    """A value as both exports write it: instants in ISO 8601 (UTC as `Z`, as the API writes
    them), decimals as numbers, everything else as it is."""
    if isinstance(value, datetime.datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


# A text cell that a spreadsheet would run as a formula (CSV injection): a job's name is the
# user's to choose. Such a cell gets a leading apostrophe, as OWASP advises.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, (list, dict)):  # a JSON column: its JSON text
        return orjson.dumps(value).decode()
    value = cell(value)
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _batches(rows):
    """The rows in lists of EXPORT_BATCH: each becomes one piece of the response (a piece per
    row made the web server's per-write cost the export's)."""
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == EXPORT_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def csv_lines(headers, rows):
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(headers)
    yield out.getvalue().encode()
    for batch in _batches(rows):
        out.seek(0)
        out.truncate()
        writer.writerows([_csv_cell(v) for v in row] for row in batch)
        yield out.getvalue().encode()


def json_array(headers, rows):
    """A JSON array of objects, streamed: `[`, the rows separated by commas, `]`."""
    yield b"["
    sep = b""
    for batch in _batches(rows):
        items = [orjson.dumps(dict(zip(headers, map(cell, row), strict=True))) for row in batch]
        yield sep + b",".join(items)
        sep = b","
    yield b"]\n"


def export_response(queryset, fields: dict[str, str], fmt: str, name: str):
    """Stream what `queryset` selects, in its order, as CSV or a JSON array: `EXPORT_CHUNK`
    rows at a time from the database, never the whole list in memory."""
    headers = list(fields)
    rows = (
        queryset.prefetch_related(None)
        .values_list(*fields.values())
        .iterator(chunk_size=EXPORT_CHUNK)
    )
    if fmt == "csv":
        body, content_type = csv_lines(headers, rows), "text/csv; charset=utf-8"
    else:
        body, content_type = json_array(headers, rows), "application/json"
    response = StreamingHttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    response["Cache-Control"] = "no-store"
    return response


# Pages ------------------------------------------------------------------------------------


@dataclass
class Tools:
    """What the filter form shows besides the filters: page size and export links."""

    page_size: int
    page_sizes: tuple[int, ...]
    csv_url: str
    json_url: str


def page_size(request, filterset: ListFilterSet) -> int:
    raw = request.GET.get("page_size", "")
    if raw == "":
        return DEFAULT_PAGE_SIZE
    if raw.isascii() and raw.isdigit() and len(raw) <= 6 and 1 <= int(raw) <= MAX_PAGE_SIZE:
        return int(raw)
    filterset.reject(
        "page_size", f"Rows per page must be a whole number from 1 to {MAX_PAGE_SIZE}."
    )
    return DEFAULT_PAGE_SIZE


def _export_url(request, fmt: str) -> str:
    params = request.GET.copy()
    for name in ("page", "page_size", "format"):
        params.pop(name, None)
    params["format"] = fmt
    return "?" + params.urlencode()


def list_page(request, filterset: ListFilterSet, template: str, context=None, *, name: str,
              decorate=None, plan=None):  # fmt: skip
    """A list page: its rows for the filters, sort and page size in the URL, or with
    `?format=csv|json` their streamed export. Bad parameters answer 400 with the errors shown
    and no row, as if filtered. `context` may be a callable returning the page's extra context:
    it is then called for the HTML page only, never for an export (which reads no row before
    its response is sent). `plan`: how the page finds its ids and total in a bounded way
    (web.core.paging.paginate)."""
    size = page_size(request, filterset)
    fmt = request.GET.get("format", "")
    if fmt not in ("", "html", *FORMATS):
        filterset.reject("format", "Export as csv or json; html (or nothing) is this page.")
    if fmt in FORMATS and filterset.is_valid():
        return export_response(filterset.qs, type(filterset).export_fields, fmt, name)
    page = paginate(request, filterset.qs, per_page=size, by_id=True, plan=plan)
    if decorate is not None:
        decorate(page.rows)
    sizes = tuple(sorted({*PAGE_SIZES, size}))
    tools = Tools(size, sizes, _export_url(request, "csv"), _export_url(request, "json"))
    extra = context() if callable(context) else context
    out = {"filter": filterset, "page": page, "listing": tools, **(extra or {})}
    return render(request, template, out, status=200 if filterset.is_valid() else 400)
