"""The jobs list's facets (BigPanDA's, DIRAC's Job Monitor's): how many jobs are in each state,
for the list's other filters and what the user may see, each count a link that filters the list
by that state."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

from matcher.models import JobStatus
from web.matcher.filters import JobFilterSet

# Not filters: a facet's link starts from the first page and is never an export.
NOT_KEPT = ("status", "page", "format")


@dataclass(frozen=True)
class Facet:
    state: str  # "" for every state
    count: int
    url: str
    on: bool


def status_facets(query, visible) -> list[Facet]:
    """The "all" facet, then one per state that has jobs (or is chosen), in the lifecycle's
    order. `query`: the list's GET parameters; `visible`: the jobs the user may see. Empty when
    the list's other filters are not valid (the page shows their errors)."""
    rest = query.copy()
    chosen = set(rest.getlist("status"))
    for name in NOT_KEPT:
        rest.pop(name, None)
    filterset = JobFilterSet(rest, queryset=visible)
    if not filterset.is_valid():
        return []
    counts = dict(
        filterset.qs.order_by()
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )

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
    return facets
