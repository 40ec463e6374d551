"""A group's edits (its JobShare and properties) with the TaskQueue priorities they change.

shares.services records the edit (the group and its change history); the priorities of the
group's TaskQueues depend on its JobShare and JobSharing, so when one of those really changed
they are recomputed after the commit, as the edit's caller sees it. Pages, the API, Django's
admin and tools edit a group through these, never through shares.services directly.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from matcher.taskqueue_priorities import recompute_priorities
from shares import services as share_services
from shares.models import GridGroup, GroupChange


def update_group(group: GridGroup, changes: dict, user=None, comment: str = "") -> GridGroup:
    """Apply {field: value} to the group, recording each real change (who, when, old -> new);
    its TaskQueues' priorities follow after the commit. Raises ShareError for a bad value."""
    return _reprioritised(share_services.change_group, group, changes, user, comment)


def revert_change(change: GroupChange, user=None) -> GridGroup:
    """Put the field back to its value before `change`, as a new recorded change; the group's
    TaskQueues' priorities follow after the commit."""
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
