from django.conf import settings
from django.db import models
from django.db.models import Q


class ParameterValue(models.Model):
    """One version of a gdpconfig parameter. The newest version of a name is the active value."""

    name = models.CharField(max_length=100, db_index=True)
    version = models.PositiveIntegerField()
    value = models.JSONField()
    previous = models.JSONField(null=True, blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    changed_at = models.DateTimeField(auto_now_add=True)
    comment = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="parameter_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class CycleRun(models.Model):
    """One run of a background cycle: what the dashboard and the tests read."""

    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCESS = "success"
        FAILED = "failed"
        SKIPPED = "skipped"
        ABANDONED = "abandoned"

    kind = models.CharField(max_length=64)
    started = models.DateTimeField()
    finished = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    counts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    # Measured on the real clock: `started` and `finished` are on the (maybe simulated) one.
    real_seconds = models.FloatField("duration (real s)", null=True, blank=True)
    # Several worker hosts share the cycles: which one (NODE_NAME) and which process ran this.
    host = models.CharField(max_length=128, blank=True, help_text="host/pid that ran it")

    class Meta:
        ordering = ["-started", "-id"]
        indexes = [models.Index(fields=["kind", "-started"], name="cyclerun_kind_started")]
        constraints = [
            # At most one run of a kind at a time: claiming a run is inserting this row.
            models.UniqueConstraint(
                fields=["kind"], condition=Q(status="running"), name="one_running_cycle_per_kind"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.started:%Y-%m-%d %H:%M:%S} {self.status}"

    @property
    def duration_s(self) -> float | None:
        """How long the run took, in real seconds."""
        if self.real_seconds is not None:
            return self.real_seconds
        if self.finished is None:
            return None
        return (self.finished - self.started).total_seconds()  # a run from before real_seconds


CYCLE_STATUS_CHOICES = CycleRun.Status.choices  # named for the OpenAPI enum


class SimulationClock(models.Model):
    """The simulated grid's shared clock (one row): simulated time is anchor_sim plus the real
    time since anchor_real times speed while running, anchor_sim while paused."""

    running = models.BooleanField(default=True)
    speed = models.FloatField(default=60.0)
    anchor_real = models.DateTimeField()
    anchor_sim = models.DateTimeField()
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"{'running' if self.running else 'paused'} at {self.speed:g}x"


class ThrottleWindow(models.Model):
    """How many requests of a kind (`scope`) one key (an account, an address, a user) made in
    the window that began at `started`: shared by every process and host, counted by one upsert
    (core/throttling.py), so more workers do not mean more attempts."""

    scope = models.CharField(max_length=16)
    key = models.CharField(max_length=150)
    started = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "key"], name="throttle_window_unique")
        ]
        indexes = [models.Index(fields=["scope", "started"], name="throttle_window_started")]

    def __str__(self) -> str:
        return f"{self.scope} {self.key}: {self.count} since {self.started:%H:%M:%S}"
