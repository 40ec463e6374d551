"""What the timeouts cycle did: one row per job a rule acted on.

The model came from brokerage; its table, brokerage_timeoutaction until migration 0003, is now
timeouts_timeoutaction, rows and ids kept.
"""

from django.db import models

from matcher.models import Job


class TimeoutActionQuerySet(models.QuerySet):
    def visible_to(self, user):
        """Staff see every action; a user those on the jobs it may see."""
        if user.is_staff:
            return self
        return self.filter(job_id__in=Job.objects.visible_to(user).values("pk"))


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

    objects = TimeoutActionQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["-at"], name="timeoutaction_at"),
            models.Index(fields=["rule", "-at"], name="timeoutaction_rule_at"),
        ]

    def __str__(self) -> str:
        return f"{self.rule}: job {self.job_id} {self.from_status} → {self.to_status}"
