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


GROUPINGS = ("group", "user", "site", "ce")


class AccountingSum(models.Model):
    """The bins summed per hour and key of one grouping (a group, a user, a site, a CE): what
    the page and the API read, a few dozen rows an hour where the bins are hundreds. A
    statement trigger on the bins table (migration 0002) keeps it: every insert, update and
    delete of bins, whoever makes it, adds its difference here in the same transaction, and a
    row goes when its last bin does. Of the keys, the grouping's is set and the others are
    null or empty."""

    grouping = models.CharField(max_length=8, choices=[(g, g) for g in GROUPINGS])
    hour = models.DateTimeField(help_text="the start of the hour")
    group = models.ForeignKey(
        GridGroup, null=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
    )
    site = models.CharField(max_length=128, blank=True)
    ce = models.CharField("CE", max_length=128, blank=True)
    bins = models.IntegerField(default=0)  # the bins summed here
    running_minutes = models.FloatField(default=0.0)
    finished = models.BigIntegerField(default=0)
    failed = models.BigIntegerField(default=0)
    cpu_seconds = models.FloatField(default=0.0)
    wall_seconds = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["grouping", "hour", "group", "user", "site", "ce"],
                name="accounting_sum_unique",
                nulls_distinct=False,
            )
        ]

    def __str__(self) -> str:
        key = {"group": self.group_id, "user": self.user_id, "site": self.site, "ce": self.ce}
        return f"{self.hour:%Y-%m-%d %H}h {self.grouping} {key[self.grouping]}"


class AccountingMark(models.Model):
    """Where the cycle stopped: its last sample's time and the last status-history row read."""

    sampled_at = models.DateTimeField(null=True)
    history_id = models.BigIntegerField(default=0)  # read up to here
    seen_id = models.BigIntegerField(default=0)  # the highest there was at the last run

    def __str__(self) -> str:
        return f"accounting sampled at {self.sampled_at}, history read to {self.history_id}"
