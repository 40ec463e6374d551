"""Who may see and who may act on an owned row: one rule, here, for every app.

A row is owned when it has an `owner` (a user) and an `owner_group` (a GridGroup): jobs,
TaskQueues, tasks, job ads. Staff see and act on every one; a user sees and acts on its own
and, when the owner group has JobSharing, those of the groups it is a member of.
"""

from django.db import models
from django.db.models import Q


class OwnedQuerySet(models.QuerySet):
    """The queryset of a model with `owner` and `owner_group` foreign keys."""

    def visible_to(self, user):
        """Staff see every row; a user sees its own and those of its JobSharing groups."""
        if user.is_staff:
            return self
        return self.filter(Q(owner=user) | Q(owner_group_id__in=user.visible_group_ids()))


def may_act_on(user, obj) -> bool:
    """Staff, the owner, and members of the row's group when that group has JobSharing: the
    rule of `OwnedQuerySet.visible_to`, for one row already loaded."""
    if user.is_staff or obj.owner_id == user.pk:
        return True
    return obj.owner_group.job_sharing and user.grid_groups.filter(pk=obj.owner_group_id).exists()
