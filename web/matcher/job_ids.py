"""How the jobs list (page and API) finds a page's jobs at a cost bounded by what it shows,
whatever the history beneath (web.core.pagination's plans).

- A search by part of a name (`q`, not a whole number) in id order: the newest RECENT_IDS ids
  walked, then the older ones through the name's trigram index (a bitmap, sorted). The walk
  newest first alone went through every newer job when only old jobs have the term.
- Otherwise, for a user who is not staff or for the `status` filter: one narrow query per
  visibility branch (their own jobs, each JobSharing group's) and per state asked for, each a
  range of an index in id order ((owner, status, id), (owner_group, status, id), (status, id):
  matcher migration 0021), merged. The OR of the branches in one statement could only be
  walked newest first, through every newer job of others or in other states.

Each gives exactly the ids the list's own query gives, in its order; `None` where a plan has
nothing better (another sort, a staff list without a state), and the list reads as it did.
"""

from __future__ import annotations

from functools import cached_property

from django.db.models import Case, Q, Value, When

from matcher.models import Job, JobStatus
from web.core.pagination import id_direction, merged_ids, searched_count, searched_ids
from web.matcher.filters import JobFilterSet


def is_text_search(value: str | None) -> bool:
    """The list's `q` searches names (web.core.listing.SearchFilter: a whole number is an id)."""
    value = (value or "").strip()
    return bool(value) and not (value.isascii() and value.isdigit())


def opaque_jobs(user, params):
    """The jobs the list's filters `params` select among those `user` may see, the visibility
    test (shares.ownership.OwnedQuerySet.visible_to's rule) written so that no index serves it:
    a search's bitmap is then the name's index alone, never ANDed with a bitmap of every job of
    the user's group (which grows with the history)."""
    base = Job.objects.all()
    if not user.is_staff:
        visible = Q(owner=user) | Q(owner_group_id__in=user.visible_group_ids())
        test = Case(When(visible, then=Value(True)), default=Value(False))
        base = base.alias(visible_here=test).filter(visible_here=True)
    return JobFilterSet(params, queryset=base).qs


def unscoped_jobs(user, params):
    """The jobs the list's filters `params` select of every user, or None for staff (whose
    list is that already): what a search's bitmap of the name's index rechecks."""
    return None if user.is_staff else JobFilterSet(params, queryset=Job.objects.all()).qs


class JobIds:
    """The jobs list's bounded plan for `user` and the list's query parameters `params`."""

    def __init__(self, user, params):
        self.search = is_text_search(params.get("q"))
        wanted = params.getlist("status") if hasattr(params, "getlist") else []
        self.statuses = sorted({s for s in wanted if s in JobStatus.values})
        self.staff = user.is_staff
        self.user = user
        self.params = params
        # Every id the search selects, when a page's search found fewer than it asked for from
        # the start: the page's total and facets are then read from them, not searched again.
        self.every_match: list[int] | None = None

    @cached_property
    def opaque(self):
        return opaque_jobs(self.user, self.params)

    @cached_property
    def unscoped(self):
        return unscoped_jobs(self.user, self.params)

    def branches(self) -> list[Q]:
        owners = (
            [Q()]
            if self.staff
            else [Q(owner=self.user), *(Q(owner_group_id=g) for g in self.user.visible_group_ids())]
        )
        if not self.statuses:
            return owners
        return [owner & Q(status=state) for owner in owners for state in self.statuses]

    def ids(self, queryset, limit: int, *, descending: bool | None = None,
            bound: int | None = None) -> list[int] | None:  # fmt: skip
        """The first `limit` ids of `queryset` beyond `bound` in its id order (`descending`
        given by the API's cursor; read from the queryset's ordering for the page)."""
        if descending is None:
            descending = id_direction(queryset)
            if descending is None:
                return None
        if self.search:
            ids = searched_ids(
                queryset, limit, descending=descending, bound=bound, opaque=self.opaque,
                unscoped=self.unscoped,
            )  # fmt: skip
            if bound is None and len(ids) < limit:
                self.every_match = ids
            return ids
        if self.staff and not self.statuses:
            return None  # the primary key in id order, already
        return merged_ids(queryset, self.branches(), limit, descending=descending, bound=bound)

    def count(self, queryset, cap: int) -> int | None:
        """How many jobs `queryset` selects, up to `cap` (the page's "more than ...")."""
        if not self.search:
            return None
        if self.every_match is not None:
            return min(len(self.every_match), cap)
        return searched_count(queryset, cap, opaque=self.opaque, unscoped=self.unscoped)
