"""What the timeouts cycle did: one row per job a rule acted on.

The model came from brokerage; its table, brokerage_timeoutaction until migration 0003, is now
timeouts_timeoutaction, rows and ids kept. Each row carries its job's owner and group (a job's
never change), so that who may see it is read on the row's own indexes, not by joining the
jobs a user may see (a year of them).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from matcher.models import Job
from shares.models import GridGroup


class TimeoutActionQuerySet(models.QuerySet):
    def visible_to(self, user):
        """Staff see every action; a user those on the jobs it may see (its own, and those of
        its JobSharing groups: the rule of shares.ownership, on the job's owner and group)."""
        if user.is_staff:
            return self
        return self.filter(Q(owner=user) | Q(owner_group_id__in=user.visible_group_ids()))


class TimeoutAction(models.Model):
    """One job a timeout rule (or fast rebrokerage) acted on: what the timeouts page reads."""

    cycle_run = models.BigIntegerField(null=True, blank=True, help_text="CycleRun id")
    at = models.DateTimeField()
    rule = models.CharField(max_length=32)
    # No database constraint: a log row must never slow down or block deleting jobs.
    job = models.ForeignKey(
        Job, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", db_index=False
    )
    from_status = models.CharField(max_length=16)
    to_status = models.CharField(max_length=16)
    queue = models.CharField(max_length=128, blank=True)
    reason = models.CharField(max_length=255, blank=True)
    # The job's owner and group, copied when the row is written (no constraint, as for job).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        null=True,
        blank=True,
        db_index=False,  # the indexes below lead with it
    )
    owner_group = models.ForeignKey(
        GridGroup,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        null=True,
        blank=True,
        db_index=False,  # the indexes below lead with it
    )

    objects = TimeoutActionQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["-at"], name="timeoutaction_at"),
            models.Index(fields=["rule", "-at"], name="timeoutaction_rule_at"),
            models.Index(fields=["owner", "-at", "-id"], name="timeoutaction_owner_at"),
            models.Index(fields=["owner_group", "-at", "-id"], name="timeoutaction_group_at"),
        ]

    def __str__(self) -> str:
        return f"{self.rule}: job {self.job_id} {self.from_status} → {self.to_status}"

    def save(self, *args, **kwargs):
        """A row written one at a time (the admin, a test) takes its job's owner and group
        when not given; the cycle writes them in bulk (timeouts.actions)."""
        if self.owner_id is None and self.owner_group_id is None:
            found = Job.objects.filter(pk=self.job_id).values_list("owner_id", "owner_group_id")
            self.owner_id, self.owner_group_id = found.first() or (None, None)
        super().save(*args, **kwargs)
