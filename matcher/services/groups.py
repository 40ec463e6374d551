"""A group's edits (its JobShare and properties) with the TaskQueue priorities they change.

shares.services records the edit (the group and its change history); the priorities of the
group's TaskQueues depend on its JobShare and JobSharing, so when one of those really changed
they are recomputed after the commit, as the edit's caller sees it. Pages, the API, Django's
admin and tools edit a group through these, never through shares.services directly.

JobShare is bounded like a live parameter's number (core.gdpconfig_shapes.Number): a share far
above every other gives its group the whole grid, and the WMSHistory corrector then remembers
the usage that followed for as long as its longest time slice. Every edit and revert is checked
here; the forms and the API ask job_share_problem() to say so beside the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from django.db import transaction

from core.gdpconfig_shapes import Number
from matcher.taskqueue_priorities import recompute_priorities
from shares import services as share_services
from shares.models import GridGroup, GroupChange

JOB_SHARE_MAX = 1_000_000.0  # a thousand times the default JobShare (1000)
JOB_SHARE = Number(0, JOB_SHARE_MAX)


def job_share_problem(value: object) -> str | None:
    """Why `value` cannot be a JobShare (a sentence naming JobShare), or None when it can."""
    found = JOB_SHARE.problem(value)
    if found is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return f"JobShare must be between 0 and {JOB_SHARE_MAX:,.0f}, got {value:,.10g}"
    return f"JobShare {found}"


def _check(changes: dict) -> None:
    if "job_share" in changes:
        problem = job_share_problem(changes["job_share"])
        if problem:
            raise share_services.ShareError("job_share", problem)


def update_group(group: GridGroup, changes: dict, user=None, comment: str = "") -> GridGroup:
    """Apply {field: value} to the group, recording each real change (who, when, old -> new);
    its TaskQueues' priorities follow after the commit. Raises ShareError for a bad value
    (a JobShare out of its bounds included)."""
    _check(changes)
    return _reprioritised(share_services.change_group, group, changes, user, comment)


def revert_change(change: GroupChange, user=None) -> GridGroup:
    """Put the field back to its value before `change`, as a new recorded change; the group's
    TaskQueues' priorities follow after the commit. Raises ShareError when that value is now
    out of bounds (a JobShare from before they were enforced)."""
    _check({change.field: change.old})
    return _reprioritised(share_services.undo_change, change, user)


def _reprioritised(edit: Callable[..., tuple[GridGroup, list[str]]], *args) -> GridGroup:
    with transaction.atomic():
        group, changed = edit(*args)
        if share_services.PRIORITY_FIELDS.intersection(changed):
            # After the commit, as the edit's readers see it; a failure there is logged, and
            # the priorities cycle puts the priorities right within two minutes.
            group_ids = [group.pk]
            transaction.on_commit(lambda: recompute_priorities(group_ids), robust=True)
    return group
