from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce

from matcher.lifecycle import FINAL_STATES
from matcher.taskqueues import MULTI_VALUED_FIELDS
from shares.models import GridGroup
from shares.ownership import OwnedQuerySet


class Site(models.Model):
    class Status(models.TextChoices):
        # DIRAC's site mask: a banned site gets no pilot from the director and no job from the
        # brokerage (matcher/site_mask.py; its history: SiteMaskChange).
        ACTIVE = "active"
        BANNED = "banned"

    name = models.CharField(max_length=128, unique=True)
    description = models.CharField(max_length=200, blank=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.ACTIVE, db_default=Status.ACTIVE
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ComputingElement(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        DRAINING = "draining"
        BANNED = "banned"

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="computing_elements")
    name = models.CharField(max_length=128, unique=True)
    ce_type = models.CharField("CE type", max_length=32, default="HTCondorCE")
    cpu_time_limit = models.PositiveIntegerField(
        "CPU time limit (s)", default=86400, validators=[MinValueValidator(1)]
    )
    platforms = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)
    max_waiting_pilots = models.PositiveIntegerField(default=50)
    max_running_pilots = models.PositiveIntegerField(default=500)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)

    class Meta:
        ordering = ["site__name", "name"]
        verbose_name = "computing element"

    def __str__(self) -> str:
        return self.name


CE_STATUS_CHOICES = ComputingElement.Status.choices  # named for the OpenAPI enum


class JobStatus(models.TextChoices):
    """PanDA's job states, which contain DIRAC's; `activated` is "waiting in a TaskQueue".
    Their groupings and transitions: matcher.lifecycle (FINAL_STATES is re-exported here)."""

    PENDING = "pending"
    DEFINED = "defined"
    ASSIGNED = "assigned"
    THROTTLED = "throttled"
    ACTIVATED = "activated"
    SENT = "sent"
    STARTING = "starting"
    RUNNING = "running"
    HOLDING = "holding"
    TRANSFERRING = "transferring"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"
    CLOSED = "closed"


# What a job runs: stored with it, told to its pilot, never part of its TaskQueue.
PAYLOAD_FIELDS = (
    "executable",
    "arguments",
    "environment",
    "output_sandbox",
    "stdout_name",
    "stderr_name",
)
# What a pilot reports of the payload it ran; a reschedule clears them.
RESULT_FIELDS = (
    "exit_code",
    "application_status",
    "cpu_seconds",
    "wall_seconds",
    "peak_memory_kb",
    "hostname",
    "output_truncated",
    "error_code",
    "error_category",
)


class Requirements(models.Model):
    """The eight multi-valued requirements a job states and its TaskQueue shares
    (matcher.taskqueues.MULTI_VALUED_FIELDS): canonical sorted lists, empty meaning "no
    restriction"."""

    sites = models.JSONField(default=list, blank=True)
    banned_sites = models.JSONField(default=list, blank=True)
    grid_ces = models.JSONField("Grid CEs", default=list, blank=True)
    platforms = models.JSONField(default=list, blank=True)
    submit_pools = models.JSONField(default=list, blank=True)
    pilot_types = models.JSONField(default=list, blank=True)
    grid_middlewares = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)

    class Meta:
        abstract = True

    def requirements(self) -> dict:
        return {f: getattr(self, f) for f in MULTI_VALUED_FIELDS}


# Carried by the jobs list's sort indexes: a user's page filters on them without the table.
OWNERS = ["owner", "owner_group"]


class Job(Requirements):
    # Indexed by the composite (owner, -id) and (owner_group, -id) indexes below.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="jobs", db_index=False
    )
    owner_group = models.ForeignKey(
        GridGroup, on_delete=models.PROTECT, related_name="jobs", db_index=False
    )
    name = models.CharField(max_length=128, blank=True)
    setup = models.CharField(max_length=64)
    cpu_time = models.PositiveIntegerField("CPU time (s)")
    user_priority = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(0), MaxValueValidator(10)]
    )
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.DEFINED)
    status_reason = models.CharField(max_length=255, blank=True)
    # The TaskQueue the job joined last. No database constraint: a TaskQueue vanishes when
    # its last waiting job leaves, and finished jobs keep the id as a record.
    task_queue = models.ForeignKey(
        "TaskQueue",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    site = models.CharField(max_length=128, blank=True, help_text="where it was matched / ran")
    # db_default: bulk loads (COPY) name only the columns a waiting job needs.
    grid_ce = models.CharField(
        "Grid CE", max_length=128, blank=True, default="", db_default="", help_text="where matched"
    )
    pilot_reference = models.CharField(
        max_length=255, blank=True, default="", db_default="", help_text="the pilot it went to"
    )
    # The pilot that claimed it, set by the claim itself: only that pilot's credential reports
    # on the job. No database constraint: the retention cycle deletes old pilots, never jobs.
    pilot = models.ForeignKey(
        "pilots.Pilot",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="claimed_jobs",
    )
    heartbeat = models.DateTimeField(null=True, blank=True, help_text="the pilot's last word")
    # PanDA's currentPriority (a task's jobs take the task's priority) and jobSubStatus (set by
    # an own stage-out mechanism): the timeout rules read both.
    current_priority = models.IntegerField(default=0, db_default=0)
    sub_status = models.CharField(
        "jobSubStatus", max_length=32, blank=True, default="", db_default=""
    )
    jdl = models.TextField(blank=True)
    # What the job runs: not requirements, never in the TaskQueue definition.
    # db_default: the bulk loaders' COPY names none of them.
    executable = models.CharField(max_length=1024, blank=True, default="", db_default="")
    arguments = models.JSONField(default=list, db_default=[], blank=True)
    environment = models.JSONField(default=dict, db_default={}, blank=True)
    output_sandbox = models.JSONField(default=list, db_default=[], blank=True)
    stdout_name = models.CharField(max_length=255, default="std.out", db_default="std.out")
    stderr_name = models.CharField(max_length=255, default="std.err", db_default="std.err")
    # What it did: its pilot's reports.
    exit_code = models.IntegerField(null=True, blank=True, default=None, db_default=None)
    application_status = models.CharField(max_length=255, blank=True, default="", db_default="")
    cpu_seconds = models.FloatField(null=True, blank=True, default=None, db_default=None)
    wall_seconds = models.FloatField(null=True, blank=True, default=None, db_default=None)
    peak_memory_kb = models.BigIntegerField(null=True, blank=True, default=None, db_default=None)
    hostname = models.CharField(max_length=255, blank=True, default="", db_default="")
    # What of its outputs its pilot cut or left out (over MaxOutputSandboxBytes), or why none
    # went up: empty when everything it wrote is there.
    output_truncated = models.CharField(max_length=1024, blank=True, default="", db_default="")
    # Why it failed, PanDA's way (matcher.errors): the pilot error code and its category.
    error_code = models.IntegerField(null=True, blank=True, default=None, db_default=None)
    error_category = models.CharField(max_length=32, blank=True, default="", db_default="")
    kill_requested = models.BooleanField(default=False, db_default=False)
    output_tail = models.TextField(blank=True, default="", db_default="")
    reschedule_count = models.PositiveSmallIntegerField(default=0)
    created = models.DateTimeField()
    status_changed = models.DateTimeField()

    objects = OwnedQuerySet.as_manager()  # visible_to(user): shares.ownership's rule

    class Meta:
        ordering = ["-id"]
        indexes = [
            # Site and status included (PostgreSQL): a user's sites x states summary is an
            # index-only scan of their own jobs, not of the table.
            models.Index(fields=["owner", "-id"], name="job_owner_id", include=["site", "status"]),
            models.Index(
                fields=["owner_group", "-id"], name="job_group_id", include=["site", "status"]
            ),
            # A user's jobs sorted by group: the groups in name order, each an index range of
            # (owner, group) already in id order (alice's 200,000 of 1M jobs: 60 ms, not 600).
            models.Index(fields=["owner", "owner_group", "id"], name="job_owner_group_id"),
            # The jobs list sorts by any column, ties broken by id in the same direction
            # (web.core.listing): one (column, id) index per column, read either way, keeps a
            # sorted page at 1M jobs an index scan. Owner and group are included (PostgreSQL)
            # so that a user's page is an index-only scan: the rows of others it passes over
            # are never read from the table (alice by name, newest first: 26 ms, not 400).
            # (status, id) also serves "one status, newest first" backwards. Owner and group
            # sort by name through a join.
            *[
                models.Index(
                    fields=[column, "id"], name=f"job_{name}_sort", include=[*more, *OWNERS]
                )
                for column, name, more in (
                    ("status", "status", []),
                    ("name", "name", []),
                    ("cpu_time", "cpu_time", []),
                    ("user_priority", "priority", []),
                    ("site", "site", ["status"]),
                    ("created", "created", []),
                    ("status_changed", "changed", []),
                )
            ],
            # The jobs that entered a state within a window (the error summary: failed in the
            # last day reads ~2 % of the jobs, not all of them).
            models.Index(fields=["status", "status_changed"], name="job_status_changed"),
            # The list sorts a NULL TaskQueue as 0 (web.core.listing: a cursor cannot carry NULL).
            models.Index(
                Coalesce("task_queue", Value(0), output_field=models.BigIntegerField()),
                F("id"),
                name="job_task_queue_sort",
                include=["task_queue", *OWNERS],
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(user_priority__gte=0, user_priority__lte=10),
                name="job_user_priority_0_10",
            )
        ]

    def __str__(self) -> str:
        return f"Job {self.pk}"

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATES


class JobStatusHistory(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="history", db_index=False)
    at = models.DateTimeField()
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16)
    reason = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["job", "at"], name="jobhistory_job_at")]
        verbose_name_plural = "job status history"

    def __str__(self) -> str:
        return f"{self.job_id}: {self.from_status or '∅'} → {self.to_status}"


class TaskQueue(Requirements):
    """Jobs with identical requirements, matched as one (DIRAC's tq_TaskQueues).

    Single-valued part: owner (DN), owner group, setup, CPU segment. Multi-valued part: the
    canonical sorted lists below; an empty list means "no restriction". `key` is a digest of the
    whole canonical definition, so that the lookup on insertion is one indexed equality.
    """

    key = models.CharField(max_length=64, unique=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="task_queues"
    )
    owner_group = models.ForeignKey(GridGroup, on_delete=models.PROTECT, related_name="task_queues")
    setup = models.CharField(max_length=64)
    cpu_time = models.PositiveIntegerField("CPU segment (s)")
    priority = models.FloatField(default=1.0)
    created = models.DateTimeField()

    objects = OwnedQuerySet.as_manager()  # visible_to(user): shares.ownership's rule

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["owner_group", "owner"], name="tq_group_owner")]

    def __str__(self) -> str:
        return f"TaskQueue {self.pk}"

    def definition(self) -> dict:
        d = {
            "owner_dn": self.owner.identity(),
            "owner_group": self.owner_group.name,
            "setup": self.setup,
            "cpu_time": self.cpu_time,
        }
        d.update(self.requirements())
        return d


class TaskQueueJob(models.Model):
    """Membership of a waiting job in its TaskQueue (DIRAC's tq_Jobs): matching reads only this
    table, never the job history. A job is in at most one TaskQueue."""

    job = models.OneToOneField(Job, primary_key=True, on_delete=models.CASCADE, related_name="+")
    # PROTECT: a TaskQueue is deleted only once it is empty, never together with its jobs.
    task_queue = models.ForeignKey(
        TaskQueue, on_delete=models.PROTECT, related_name="members", db_index=False
    )
    user_priority = models.PositiveSmallIntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["task_queue", "user_priority", "job"], name="tqjob_tq_prio_job")
        ]

    def __str__(self) -> str:
        return f"{self.job_id} in {self.task_queue_id}"


class TaskQueuePriorityCount(models.Model):
    """How many jobs wait in a TaskQueue at each UserPriority: the matcher draws the winning
    priority from these counts, so a match costs as many rows as there are distinct priorities,
    not as many as there are waiting jobs. Kept in the same transactions as the membership."""

    task_queue = models.ForeignKey(TaskQueue, on_delete=models.CASCADE, related_name="counts")
    user_priority = models.PositiveSmallIntegerField()
    jobs = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task_queue", "user_priority"], name="tq_priority_count_unique"
            )
        ]

    def __str__(self) -> str:
        return f"TQ {self.task_queue_id} p{self.user_priority}: {self.jobs}"


class JobStateSample(models.Model):
    """Jobs per state at one moment (the usage-sampling cycle): the dashboard's time series."""

    at = models.DateTimeField(db_index=True)
    counts = models.JSONField(default=dict)

    class Meta:
        ordering = ["at"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M}: {sum(self.counts.values())} jobs"


class TaskQueueChange(models.Model):
    """One change to what the matchers cache about the TaskQueues, written in the transaction
    that made it: every matcher process reads the entries after its last position (at most
    once a second) instead of reloading every TaskQueue. Trimmed by the cleanup cycle; a
    `trimmed` entry tells a process that fell behind the trim to reload."""

    class Kind(models.TextChoices):
        CREATED = "created"
        DROPPED = "dropped"
        PRIORITY = "priority"
        GROUP = "group"  # a group's JobSharing may have changed: its TaskQueues' owner rule
        TRIMMED = "trimmed"  # entries up to `upto` were deleted

    seq = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    task_queue_id = models.BigIntegerField(null=True)
    group_id = models.BigIntegerField(null=True)
    priority = models.FloatField(null=True)
    upto = models.BigIntegerField(null=True)
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.seq}: {self.kind} {self.task_queue_id or self.group_id or self.upto}"


class PrioritiesDue(models.Model):
    """A group whose TaskQueues appeared or vanished since its priorities were last computed:
    recomputed in the background once the mark is RECOMPUTE_DELAY old (so a group whose
    TaskQueues come and go many times a second is recomputed once per delay, by one process),
    and by every priorities cycle. See matcher/services/housekeeping.py."""

    group_id = models.BigIntegerField(primary_key=True)
    since = models.DateTimeField()

    def __str__(self) -> str:
        return f"priorities of group {self.group_id} due since {self.since}"


class SiteMaskChange(models.Model):
    """One ban or allow of a site or a CE (the site mask's history): who, when, why, and the
    status it left. Written by matcher.site_mask with the status it records."""

    class Action(models.TextChoices):
        BAN = "ban"
        ALLOW = "allow"

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="mask_changes")
    # Empty: the whole site; else one of its CEs (kept by name once the CE is deleted).
    ce_name = models.CharField("CE", max_length=128, blank=True, default="")
    action = models.CharField(max_length=8, choices=Action.choices)
    from_status = models.CharField(max_length=16)
    reason = models.CharField(max_length=255)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    at = models.DateTimeField()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["site", "-at"], name="sitemask_site_at")]

    def __str__(self) -> str:
        return f"{self.action} {self.ce_name or self.site}: {self.reason}"


# --- rollups: jobs counted as the mover moves them (matcher/services/rollups.py) ---------------


class JobCount(models.Model):
    """Jobs per (owner, group, site, state), folded from JobCountDelta: the summaries read
    these (with the deltas not folded yet), never a GROUP BY over the job table. Plain ids, no
    foreign keys: a row is a number, and the fold writes it without checking other tables."""

    owner_id = models.BigIntegerField()
    owner_group_id = models.BigIntegerField()
    site = models.CharField(max_length=128, blank=True)
    status = models.CharField(max_length=16)
    jobs = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner_id", "owner_group_id", "site", "status"], name="jobcount_key"
            )
        ]

    def __str__(self) -> str:
        who = f"{self.owner_id}/{self.owner_group_id}"
        return f"{who} {self.site or '-'} {self.status}: {self.jobs}"


class JobCountDelta(models.Model):
    """`n` jobs of (owner, group) moved from (from_site, from_status) to (to_site, to_status)
    at `at` ('' status: created, or deleted). Appended in the transaction of the move (an
    INSERT, never an update of a shared row: the claim is the hot path), folded into JobCount
    and JobHourCount by the fold step, which deletes them."""

    owner_id = models.BigIntegerField()
    owner_group_id = models.BigIntegerField()
    from_site = models.CharField(max_length=128, blank=True)
    from_status = models.CharField(max_length=16, blank=True)
    to_site = models.CharField(max_length=128, blank=True)
    to_status = models.CharField(max_length=16, blank=True)
    n = models.IntegerField(default=1)
    at = models.DateTimeField()

    def __str__(self) -> str:
        moved = f"{self.from_site}/{self.from_status} -> {self.to_site}/{self.to_status}"
        return f"{self.n} of {self.owner_id}/{self.owner_group_id}: {moved}"


class JobHourCount(models.Model):
    """Jobs of (owner, group) that entered a state at a site in an hour (UTC), folded from the
    deltas; kept when retention deletes the jobs (it is history)."""

    hour = models.DateTimeField()
    owner_id = models.BigIntegerField()
    owner_group_id = models.BigIntegerField()
    site = models.CharField(max_length=128, blank=True)
    status = models.CharField(max_length=16)
    jobs = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["hour", "owner_id", "owner_group_id", "site", "status"],
                name="jobhourcount_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}h {self.site or '-'} {self.status}: {self.jobs}"


# --- failed jobs counted by the hour and day they failed (matcher/services/failures.py) ----------


class FailedJobCount(models.Model):
    """Jobs now failed that entered `failed` in a bucket (`span` hours from `start`, UTC: an
    hour or a day), counted as the error summary groups them, folded from FailedJobDelta.
    `kind`: "g" every owner of a group (owner_id 0) per site, error code and category, reason
    and task; "t" a group's total; "o" one owner's jobs per the same keys; "u" one owner's total.
    `first_job`: the lowest id among them (the summary's example job). Plain ids, no foreign
    keys, as JobCount."""

    kind = models.CharField(max_length=1)
    span = models.SmallIntegerField()
    start = models.DateTimeField()
    owner_id = models.BigIntegerField()
    owner_group_id = models.BigIntegerField()
    site = models.CharField(max_length=128, blank=True)
    error_code = models.IntegerField(null=True, blank=True)
    error_category = models.CharField(max_length=32, blank=True)
    reason = models.CharField(max_length=255, blank=True)
    task_id = models.BigIntegerField(default=0)  # 0: no task
    jobs = models.BigIntegerField(default=0)
    first_job = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "kind",
                    "span",
                    "start",
                    "owner_id",
                    "owner_group_id",
                    "site",
                    "error_code",
                    "error_category",
                    "reason",
                    "task_id",
                ],
                name="failedjobcount_key",
                nulls_distinct=False,
            )
        ]
        indexes = [
            models.Index(
                fields=["owner_id", "span", "start"],
                condition=models.Q(kind="o"),
                name="failedjobcount_owner",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.start:%Y-%m-%d %H}h+{self.span} {self.site or '-'}: {self.jobs}"


class FailedJobDelta(models.Model):
    """Job `job_id` entered (n = 1) or left (n = -1) `failed`, which it entered at `changed`,
    with these keys: appended in the transaction of the move, folded into FailedJobCount."""

    job_id = models.BigIntegerField()
    n = models.SmallIntegerField()
    changed = models.DateTimeField()
    owner_id = models.BigIntegerField()
    owner_group_id = models.BigIntegerField()
    site = models.CharField(max_length=128, blank=True)
    error_code = models.IntegerField(null=True, blank=True)
    error_category = models.CharField(max_length=32, blank=True)
    reason = models.CharField(max_length=255, blank=True)
    task_id = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.n:+d} job {self.job_id} failed at {self.changed:%Y-%m-%d %H:%M}"
