"""What the grid delivered, per hour and per (group, user, site, CE): DIRAC's accounting
(WMSHistory's running jobs, the Job type's jobs and CPU), built by the accounting cycle from
samples of the running jobs and the jobs that ended, so that no page scans the jobs."""

from django.conf import settings
from django.db import models

from shares.models import GridGroup


class AccountingBin(models.Model):
    hour = models.DateTimeField(help_text="the start of the hour")
    group = models.ForeignKey(GridGroup, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    site = models.CharField(max_length=128, blank=True)
    ce = models.CharField("CE", max_length=128, blank=True)
    # job-minutes spent running in the hour (sampled each cycle): / 60 = its average running jobs
    running_minutes = models.FloatField(default=0.0)
    finished = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    # as the jobs' payloads reported them (a job without a payload reports none)
    cpu_seconds = models.FloatField(default=0.0)
    wall_seconds = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["hour", "group", "user", "site", "ce"], name="accounting_bin_unique"
            )
        ]
        indexes = [models.Index(fields=["hour"], name="accounting_bin_hour")]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}h {self.group_id}/{self.user_id} {self.site} {self.ce}"


class AccountingMark(models.Model):
    """Where the cycle stopped: its last sample's time and the last status-history row read."""

    sampled_at = models.DateTimeField(null=True)
    history_id = models.BigIntegerField(default=0)  # read up to here
    seen_id = models.BigIntegerField(default=0)  # the highest there was at the last run

    def __str__(self) -> str:
        return f"accounting sampled at {self.sampled_at}, history read to {self.history_id}"
