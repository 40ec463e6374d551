"""Paging for HTML lists without COUNT(*) over millions of rows.

A page fetches one row more than it shows to know whether there is a next page; the total is
counted only up to COUNT_CAP ("more than 10,000").
"""

from dataclasses import dataclass
from urllib.parse import urlencode

COUNT_CAP = 10_000


@dataclass
class Page:
    rows: list
    number: int
    per_page: int
    has_next: bool
    total: int
    total_capped: bool
    querystring_prev: str
    querystring_next: str

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def start_index(self) -> int:
        return (self.number - 1) * self.per_page + 1 if self.rows else 0

    @property
    def end_index(self) -> int:
        return (self.number - 1) * self.per_page + len(self.rows)


def _rows_by_id(queryset, offset: int, limit: int, plan=None) -> list:
    """The rows of a page in two steps: their ids in the list's order (a narrow query that an
    index can answer, sorted without dragging every column along: a sort by a related row's
    name at 1M jobs fell from ~0.5 s to ~50 ms), then those rows. A list's `plan` may find
    the ids in a bounded way (web.core.pagination's plans): the same ids."""
    found_ids = None if plan is None else plan.ids(queryset, offset + limit)
    if found_ids is not None:
        ids = found_ids[offset:]
    else:
        ids = list(queryset.values_list("pk", flat=True)[offset : offset + limit])
    found = {row.pk: row for row in queryset.order_by().filter(pk__in=ids)}
    return [found[pk] for pk in ids if pk in found]


def paginate(request, queryset, per_page: int = 50, *, by_id: bool = False, plan=None) -> Page:
    """`plan` (with `by_id`): an object whose `ids(queryset, limit)` and `count(queryset,
    cap)` answer a page's ids and the capped total in a bounded way, or None where it has no
    better way than the queryset's own."""
    try:
        number = max(1, int(request.GET.get("page", 1)))
    except ValueError:
        number = 1
    offset = (number - 1) * per_page
    if by_id:
        rows = _rows_by_id(queryset, offset, per_page + 1, plan)
    else:
        rows = list(queryset[offset : offset + per_page + 1])
    has_next = len(rows) > per_page
    rows = rows[:per_page]
    total = None if plan is None else plan.count(queryset, COUNT_CAP + 1)
    if total is None:
        total = queryset.order_by()[: COUNT_CAP + 1].count()
    params = request.GET.copy()
    params.pop("page", None)
    base = params.urlencode()

    def qs(n: int) -> str:
        return "?" + "&".join(p for p in (base, urlencode({"page": n})) if p)

    return Page(
        rows=rows,
        number=number,
        per_page=per_page,
        has_next=has_next,
        total=min(total, COUNT_CAP),
        total_capped=total > COUNT_CAP,
        querystring_prev=qs(number - 1),
        querystring_next=qs(number + 1),
    )
