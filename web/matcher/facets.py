"""The jobs list's facets (BigPanDA's, DIRAC's Job Monitor's): how many jobs are in each state,
for the list's other filters and what the user may see, each count a link that filters the list
by that state."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from matcher.models import JobStatus
from web.matcher.filters import JobFilterSet

# Not filters: a facet's link starts from the first page and is never an export.
NOT_KEPT = ("status", "page", "format")
# The newest jobs counted at most (BigPanDA's job limit): exact for a selection up to this size,
# one bounded scan beyond it, never the whole table (staff's list of 1M jobs: a GROUP BY over
# all of them took 0.4-0.6 s).
FACET_SCAN = 100_000


@dataclass(frozen=True)
class Facet:
    state: str  # "" for every state
    count: int
    url: str
    on: bool


def newest_counts(queryset, most: int) -> dict[str, int]:
    """Jobs per state among the newest `most` the queryset selects: one GROUP BY over a
    LIMITed scan, newest first (an index range), never the whole selection."""
    newest = queryset.order_by("-id").values("status")[:most]
    sql, params = newest.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT status, COUNT(*) FROM ({sql}) AS newest GROUP BY status", params)
        return dict(cursor.fetchall())


def status_facets(query, visible) -> tuple[list[Facet], int]:
    """(facets, scanned): the "all" facet, then one per state that has jobs (or is chosen), in
    the lifecycle's order; `scanned` is FACET_SCAN when the selection reaches it (the counts
    are then those of its newest FACET_SCAN jobs), else 0. `query`: the list's GET parameters;
    `visible`: the jobs the user may see. No facet when the list's other filters are not valid
    (the page shows their errors)."""
    rest = query.copy()
    chosen = set(rest.getlist("status"))
    for name in NOT_KEPT:
        rest.pop(name, None)
    filterset = JobFilterSet(rest, queryset=visible)
    if not filterset.is_valid():
        return [], 0
    counts = newest_counts(filterset.qs, FACET_SCAN)

    def url(state: str) -> str:
        params = rest.copy()
        if state:
            params.setlist("status", [state])
        encoded = params.urlencode()
        return "?" + encoded if encoded else "?"

    facets = [Facet("", sum(counts.values()), url(""), not chosen)]
    for state in JobStatus.values:
        if counts.get(state) or state in chosen:
            facets.append(Facet(state, counts.get(state, 0), url(state), state in chosen))
    return facets, FACET_SCAN if facets[0].count >= FACET_SCAN else 0
