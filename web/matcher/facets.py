"""The jobs list's facets (BigPanDA's, DIRAC's Job Monitor's): how many jobs are in each state,
for the list's other filters and what the user may see, each count a link that filters the list
by that state."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.db.models import Count

from matcher import job_counts
from matcher.models import Job, JobStatus
from shares.models import GridGroup, User
from web.core.pagination import newest_first
from web.matcher.filters import NOT_PLACED, JobFilterSet
from web.matcher.job_ids import is_text_search, opaque_jobs, unscoped_jobs

# Not filters: a facet's link starts from the first page and is never an export.
NOT_KEPT = ("status", "page", "format")
# The newest jobs counted at most (BigPanDA's job limit): exact for a selection up to this size,
# one bounded scan beyond it, never the whole table (staff's list of 1M jobs: a GROUP BY over
# all of them took 0.4-0.6 s).
FACET_SCAN = 100_000
# The list's filters the job counts' rollup answers (each one of its keys, exactly): with no
# other filter, the facets are every visible job's counts per state from the rollup (exact, a
# few thousand rows whatever the history), not a scan of the newest jobs. Sorting is no filter.
ROLLUP_FILTERS = ("owner", "group", "placed")
NOT_FILTERS = ("ordering",)


@dataclass(frozen=True)
class Facet:
    state: str  # "" for every state
    count: int
    url: str
    on: bool


def newest_counts(queryset, most: int, *, opaque=None, unscoped=None) -> dict[str, int]:
    """Jobs per state among the newest `most` the queryset selects: one GROUP BY over a
    LIMITed scan, newest first (an index range), never the whole selection. A search by part
    of a name (`opaque`: the same selection that only the name's index serves; `unscoped`: of
    every user; web.matcher.job_ids) counts window by window from the newest ids, then among
    the older ones through the name's index (web.core.pagination.newest_first): a walk newest
    first went through every newer job when only old jobs have the term."""
    if opaque is None:
        return _newest_counts(queryset, most)
    counts: dict[str, int] = {}

    def fetch(part, n: int) -> int:
        got = _newest_counts(part, n)
        for state, count in got.items():
            counts[state] = counts.get(state, 0) + count
        return sum(got.values())

    newest_first(queryset, most, fetch, opaque=opaque, unscoped=unscoped)
    return counts


def _newest_counts(queryset, most: int) -> dict[str, int]:
    newest = queryset.order_by("-id").values("status")[:most]
    sql, params = newest.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT status, COUNT(*) FROM ({sql}) AS newest GROUP BY status", params)
        return dict(cursor.fetchall())


def status_facets(query, visible, user=None, plan=None) -> tuple[list[Facet], int]:
    """(facets, scanned): the "all" facet, then one per state that has jobs (or is chosen), in
    the lifecycle's order. With no filter but ROLLUP_FILTERS, every visible job's counts from
    the job counts' rollup; otherwise `scanned` is FACET_SCAN when the selection reaches it
    (the counts are then those of its newest FACET_SCAN jobs), else 0. `query`: the list's GET
    parameters; `visible`: the jobs the user may see (`user`: who, for the rollup and a
    search's bounded plan; `plan`: the page's web.matcher.job_ids.JobIds, whose search may
    have found every match already). No facet when the list's other filters are not valid
    (the page shows their errors)."""
    rest = query.copy()
    chosen = set(rest.getlist("status"))
    for name in NOT_KEPT:
        rest.pop(name, None)
    filterset = JobFilterSet(rest, queryset=visible)
    if not filterset.is_valid():
        return [], 0
    known = getattr(plan, "every_match", None)
    equal = None if user is None else rollup_keys(filterset.form.cleaned_data)
    if equal is not None:
        counts = job_counts.by_status(user, **equal)
    elif known is not None and not chosen:  # the list's selection is the facets' one
        counts = dict(
            Job.objects.filter(pk__in=known).values_list("status").annotate(n=Count("id"))
        )
    else:
        opaque = unscoped = None
        if is_text_search(rest.get("q")):
            opaque = filterset.qs if user is None else opaque_jobs(user, rest)
            unscoped = None if user is None else unscoped_jobs(user, rest)
        counts = newest_counts(filterset.qs, FACET_SCAN, opaque=opaque, unscoped=unscoped)

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
    scanned = equal is None and facets[0].count >= FACET_SCAN
    return facets, FACET_SCAN if scanned else 0


def rollup_keys(cleaned: dict) -> dict | None:
    """The job counts' keys and values ({"owner_id": ..., "site": ...}) that select what the
    list's valid filters `cleaned` (its form's cleaned data, the state left out) select, or None
    when a filter is not one of ROLLUP_FILTERS. An owner or group that does not exist is the
    id -1, which no job has."""
    equal: dict = {}
    for name, value in cleaned.items():
        if value in (None, "", [], ()) or name in NOT_FILTERS:
            continue
        if name not in ROLLUP_FILTERS:
            return None
        if name == "placed":
            equal["site"] = "" if value == NOT_PLACED else value
            continue
        model, key, field = (
            (User, "owner_id", "username")
            if name == "owner"
            else (GridGroup, "owner_group_id", "name")
        )
        pk = model.objects.filter(**{field: value}).values_list("pk", flat=True).first()
        equal[key] = -1 if pk is None else pk
    return equal
