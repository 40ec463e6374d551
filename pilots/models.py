"""Pilots and the director's records: DIRAC's PilotAgents table, the proxies pilots are sent
with, and what the director decided per TaskQueue. Moved from matcher; their tables took the
pilots_ names later (migration 0003), rows and ids kept."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from shares.models import GridGroup


class Credential(models.Model):
    """A proxy the director may submit pilots with: an identity (DN) acting for a group, valid
    until `expires`. The director needs PilotProxyMinDays left, else it skips the TaskQueue."""

    dn = models.CharField("DN", max_length=255)
    group = models.ForeignKey(GridGroup, on_delete=models.CASCADE, related_name="credentials")
    expires = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dn", "group"], name="credential_dn_group_unique")
        ]

    def __str__(self) -> str:
        return f"{self.dn} as {self.group}"


class PilotStatus(models.TextChoices):
    SUBMITTED = "Submitted"
    READY = "Ready"
    SCHEDULED = "Scheduled"
    WAITING = "Waiting"
    RUNNING = "Running"
    DONE = "Done"
    FAILED = "Failed"
    ABORTED = "Aborted"


PILOT_WAITING_STATES = (
    PilotStatus.SUBMITTED,
    PilotStatus.READY,
    PilotStatus.SCHEDULED,
    PilotStatus.WAITING,
)
PILOT_FINAL_STATES = (PilotStatus.DONE, PilotStatus.FAILED, PilotStatus.ABORTED)


class PilotQuerySet(models.QuerySet):
    def visible_to(self, user):
        """Staff see every pilot; a user those acting with its credential or for its DN. A
        pilot's owner is a DN and a group name, not a user and a GridGroup: not the rule of
        `shares.ownership.OwnedQuerySet`."""
        if user.is_staff:
            return self
        return self.filter(Q(credential_user=user) | Q(owner_dn=user.dn or "-"))


class Pilot(models.Model):
    """A pilot the director submitted (DIRAC's PilotAgents table)."""

    # Unique per credential (the constraint below), not globally: another credential's pilot
    # with the same reference is another pilot.
    reference = models.CharField(max_length=255)
    task_queue_id = models.BigIntegerField(db_index=True)
    owner_dn = models.CharField(max_length=255)
    owner_group = models.CharField(max_length=64)
    private = models.BooleanField(default=False)
    broker = models.CharField(max_length=128, blank=True)
    grid_type = models.CharField(max_length=32, blank=True)
    submit_pool = models.CharField(max_length=64)
    requirements = models.TextField(blank=True, help_text="the pilot JDL")
    site = models.CharField(max_length=128, blank=True)
    ce = models.CharField("CE", max_length=128, blank=True)
    status = models.CharField(max_length=16, choices=PilotStatus.choices)
    submitted = models.DateTimeField()
    status_changed = models.DateTimeField()
    # The simulated CE's schedule: when the pilot's next transition is due.
    next_event = models.DateTimeField(null=True, blank=True)
    director_run = models.BigIntegerField(null=True, blank=True, help_text="CycleRun id")
    # The API identity the pilot acts with (the generic pilot user, or the private owner).
    credential_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    jobs_done = models.PositiveIntegerField(default=0)
    # The worker node it runs on, as it told at registration (or its simulated CE chose).
    hostname = models.CharField(max_length=255, blank=True, default="", db_default="")
    node = models.JSONField(
        default=dict, db_default={}, blank=True, help_text="cores, memory, OS, pilot version"
    )

    objects = PilotQuerySet.as_manager()

    class Meta:
        ordering = ["-submitted", "-id"]
        indexes = [
            models.Index(fields=["task_queue_id", "status", "submitted"], name="pilot_tq_status"),
            models.Index(fields=["status", "next_event"], name="pilot_status_next"),
            # The Shares page's pilots of the last hour.
            models.Index(fields=["submitted"], name="pilot_submitted"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["credential_user", "reference"], name="pilot_credential_reference_unique"
            )
        ]

    def __str__(self) -> str:
        return self.reference


class PilotStatusHistory(models.Model):
    pilot = models.ForeignKey(Pilot, on_delete=models.CASCADE, related_name="history")
    at = models.DateTimeField()
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16)
    reason = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.pilot_id}: {self.from_status} → {self.to_status}"


class PilotLogLine(models.Model):
    """A line of what a pilot logged (its own output: matched a job, the payload's end, its
    errors), kept bounded per pilot by pilots.output."""

    # Indexed by (pilot, id) below.
    pilot = models.ForeignKey(
        Pilot, on_delete=models.CASCADE, related_name="log_lines", db_index=False
    )
    at = models.DateTimeField()
    level = models.CharField(max_length=8, default="INFO")
    job_id = models.BigIntegerField(null=True, blank=True)
    message = models.CharField(max_length=1024)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["pilot", "id"], name="pilot_log_pilot_id")]

    def __str__(self) -> str:
        return f"{self.pilot_id} {self.level}: {self.message[:60]}"


class DirectorDecision(models.Model):
    """What the director decided for one TaskQueue in one cycle, and why."""

    cycle_run = models.BigIntegerField(db_index=True)
    at = models.DateTimeField()
    task_queue_id = models.BigIntegerField()
    priority = models.FloatField()
    jobs = models.IntegerField()
    cpu_time = models.IntegerField()
    lam = models.FloatField("λ")
    drawn = models.IntegerField()
    cap = models.IntegerField()
    waiting_pilots = models.IntegerField()
    submitted = models.IntegerField(default=0)
    submit_pool = models.CharField(max_length=64, blank=True)
    private = models.BooleanField(default=False)
    skipped = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["-cycle_run", "-submitted", "task_queue_id"]

    def __str__(self) -> str:
        return f"run {self.cycle_run} TQ {self.task_queue_id}: {self.submitted}"


class PandaLogReport(models.Model):
    """The log file PanDA's pilot declared in its final updateJob (its `xml`: name, size,
    adler32), and what its launcher found when it ingested the tarball the pilot left in its
    output directory (pilots.panda_pilots): stored only when both agree."""

    job = models.ForeignKey(
        "matcher.Job", on_delete=models.CASCADE, related_name="panda_log_reports"
    )
    pilot = models.ForeignKey(
        Pilot, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    name = models.CharField(max_length=255)
    guid = models.CharField(max_length=64, blank=True)
    size = models.BigIntegerField()
    adler32 = models.CharField(max_length=8)
    reported = models.DateTimeField()
    # Set by the launcher: "stored", or why the tarball was not kept.
    outcome = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.name} ({self.size} B, adler32 {self.adler32})"
