import binascii
import heapq
from base64 import b64decode
from collections.abc import Iterable
from contextlib import contextmanager

from django.core.exceptions import ValidationError as ModelValueError
from django.db import connections, transaction
from django.db.models import Max, Min, Q
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination

TRUE = ("true", "1", "yes")

# Bounded plans for lists in id order ---------------------------------------------------------
#
# A list newest first with a filter PostgreSQL cannot read from an index in id order (a part of
# a name) walks the ids from the newest, filtering: a page of a term only old jobs share walked
# every newer job (8 s at 5M jobs). The plan here (`newest_first`) looks among the RECENT_IDS
# ids next to the page's bound first (an index range, walked), and if the page is not full
# there either walks on (when the term is dense enough there that the walk is the cheaper) or
# reads the older ones through the filter's own index (a bitmap, sorted: its cost is the
# candidates the index gives, never the ids it passes over). The planner is told which, for
# that statement only (`planner`): estimates cannot tell a term that only old jobs share from
# one every new job has.

RECENT_IDS = 10_000
# Index ranges only: no bitmap (the filter's own index would read every candidate), no index-
# only scan, and each index entry read priced high: the id window is then read from the index
# range with the fewest entries (the primary key's, an owner's or a state's ids in it), never
# from a whole index with the id as its second column, which the table's weak id-to-row
# correlation made look cheaper.
WALK = {
    "enable_bitmapscan": "off",
    "enable_indexonlyscan": "off",
    "enable_seqscan": "off",
    "cpu_index_tuple_cost": "1",
}
# Bitmaps only: never the walk.
BITMAP = {"enable_indexscan": "off", "enable_indexonlyscan": "off", "enable_seqscan": "off"}


@contextmanager
def planner(settings: dict[str, str], using: str = "default"):
    """The statements inside planned with `settings` (enable_* switches), then the settings as
    they were: SET LOCAL alone would last to the end of a caller's transaction."""
    connection = connections[using]
    names = list(settings)
    with transaction.atomic(using=using):
        with connection.cursor() as cur:
            cur.execute("SELECT " + ", ".join(["current_setting(%s)"] * len(names)), names)
            before = cur.fetchone()
            _set(cur, dict(zip(names, settings.values(), strict=True)))
        yield
        with connection.cursor() as cur:
            _set(cur, dict(zip(names, before, strict=True)))


def _set(cur, settings: dict[str, str]) -> None:
    pairs = [v for item in settings.items() for v in item]
    cur.execute("SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(settings)), pairs)


def id_direction(queryset) -> bool | None:
    """True: the queryset is ordered by id descending; False: ascending; None: otherwise."""
    query = queryset.query
    ordering = tuple(query.order_by) or (
        tuple(queryset.model._meta.ordering) if query.default_ordering else ()
    )
    if ordering in (("-id",), ("-pk",)):
        return True
    if ordering in (("id",), ("pk",)):
        return False
    return None


def newest_first(queryset, need: int, fetch, *, descending: bool = True,
                 bound: int | None = None, opaque=None, unscoped=None) -> int:  # fmt: skip
    """Feed `fetch(part, n)` the parts of `queryset` beyond `bound` in id order, nearest
    first, until it has found `need` rows (it returns how many it found in `part`, at most
    `n`). Returns how many were found.

    Windows of ids are walked through an index range (the first RECENT_IDS ids, then as many
    as the density seen so far says will do) while that walk is expected to touch fewer rows
    than the filter's index would give among the older ids at that density; then everything
    older at once through a bitmap of the filter's own index (`opaque`: the same selection
    written so that no other index serves it; else `queryset`). The index's candidates are
    those of every user (`unscoped`: the selection without the user's scope, counted in the
    first window; else `queryset`'s density stands for it). A term every new job has is found
    by walking a few of them, one only old jobs have through its index's candidates, never by
    walking the ids in between."""
    span = queryset.model._base_manager.using(queryset.db).aggregate(lo=Min("id"), hi=Max("id"))
    if span["hi"] is None:
        return 0
    lo, hi = span["lo"], span["hi"]
    edge = (
        (hi + 1 if bound is None else min(bound, hi + 1))
        if descending
        else (lo - 1 if bound is None else max(bound, lo - 1))
    )

    def left() -> int:  # ids beyond the edge
        return max(0, edge - lo if descending else hi - edge)

    found = walked = 0
    window = RECENT_IDS
    candidates = None  # the index's candidates per id, of every user
    while found < need and left() > 0:
        if descending:
            part, edge = Q(id__lt=edge, id__gte=edge - window), edge - window
        else:
            part, edge = Q(id__gt=edge, id__lte=edge + window), edge + window
        with planner(WALK, queryset.db):
            found += fetch(queryset.filter(part), need - found)
            if candidates is None and unscoped is not None and 0 < found < need:
                candidates = unscoped.filter(part).order_by().count() / window
        walked += window
        if found == 0 or found >= need:
            break
        density = found / walked
        to_walk = (need - found) / density
        if to_walk > left() * (density if candidates is None else max(candidates, density)):
            break  # the index's candidates are fewer than the rows a walk would pass
        window = int(to_walk * 1.5) + 1
    if found < need and left() > 0:
        rest = Q(id__lt=edge) if descending else Q(id__gt=edge)
        with planner(BITMAP, queryset.db):
            found += fetch((queryset if opaque is None else opaque).filter(rest), need - found)
    return found


def searched_ids(queryset, limit: int, *, descending: bool = True, bound: int | None = None,
                 opaque=None, unscoped=None) -> list[int]:  # fmt: skip
    """The first `limit` ids of `queryset` in id order beyond `bound`, exactly as
    `queryset.order_by("-id")[:limit]` (or "id") finds them, found by `newest_first`."""
    order = "-id" if descending else "id"
    ids: list[int] = []

    def fetch(part, n: int) -> int:
        got = list(part.order_by(order).values_list("id", flat=True)[:n])
        ids.extend(got)
        return len(got)

    newest_first(
        queryset, limit, fetch, descending=descending, bound=bound, opaque=opaque,
        unscoped=unscoped,
    )  # fmt: skip
    return ids


def searched_count(queryset, cap: int, *, opaque=None, unscoped=None) -> int:
    """How many rows `queryset` selects, counted up to `cap`, by `newest_first`."""

    def fetch(part, n: int) -> int:
        return part.order_by()[:n].count()

    return newest_first(queryset, cap, fetch, opaque=opaque, unscoped=unscoped)


def merged_ids(queryset, branches: Iterable[Q], limit: int, *, descending: bool = True,
               bound: int | None = None) -> list[int]:  # fmt: skip
    """The first `limit` ids of `queryset` in id order beyond `bound`, where the branches
    together select all of it (they may overlap): each branch's first `limit` ids (one index
    range each, e.g. an owner's, a group's, in a state), merged. An OR of them in one
    statement cannot be read from an index in id order: PostgreSQL walked every id."""
    order = "-id" if descending else "id"
    if bound is not None:
        queryset = queryset.filter(id__lt=bound) if descending else queryset.filter(id__gt=bound)
    lists = [
        list(queryset.filter(q).order_by(order).values_list("id", flat=True)[:limit])
        for q in branches
    ]
    ids: list[int] = []
    for pk in heapq.merge(*lists, reverse=descending):
        if not ids or ids[-1] != pk:
            ids.append(pk)
            if len(ids) == limit:
                break
    return ids


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
            page = super().paginate_queryset(self._narrowed(queryset, request, view), request, view)
        except (ValueError, TypeError, ModelValueError):
            # A well-formed cursor whose position the ordering column cannot hold (a text
            # where the column is a number) was not written by us.
            if request.query_params.get(self.cursor_query_param) is None:
                raise
            raise self._invalid() from None
        if flag is not None and flag.lower() in TRUE:
            self.count = queryset.count()
        return page

    def _narrowed(self, queryset, request, view):
        """The queryset narrowed to the ids of the page the framework is about to read, found
        by the view's bounded plan (`view.id_plan()`: an object whose `ids(queryset, limit,
        descending=, bound=)` answers them in order, or None where it has no better way) when
        the list is in id order. The framework's own query then reads those rows only: the
        same rows, order and cursors as without the plan."""
        plan = getattr(view, "id_plan", None)
        plan = plan() if callable(plan) else None
        if plan is None:
            return queryset
        try:
            ordering = self.get_ordering(request, queryset, view)
            cursor = self.decode_cursor(request)
            size = self.get_page_size(request)
            offset, reverse, position = cursor if cursor is not None else (0, False, None)
            bound = None if position is None else int(position)
        except (ValidationError, NotFound, ValueError, TypeError):
            return queryset  # the framework answers it as it does
        if not size or tuple(ordering) not in (("-id",), ("id",)):
            return queryset
        descending = (ordering[0] == "-id") != bool(reverse)
        ids = plan.ids(queryset, offset + size + 1, descending=descending, bound=bound)
        return queryset if ids is None else queryset.filter(pk__in=ids)

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
