"""PanDA's view of the grid (queues, storages, nuclei, links, data), tasks, and brokerage traces.

Units follow PanDA's: storage space and dataset sizes in GB, memory and disk per job in MB,
times in seconds, diskIO in kB/s per core, throughput in MB/s.
"""

import zlib

import orjson
from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from brokerage.architecture import empty as no_architecture
from core import gdpconfig
from matcher.models import Job, Site
from shares.models import GridGroup
from shares.ownership import OwnedQuerySet


class Nucleus(models.Model):
    """A PanDA nucleus: where a task's output is aggregated; its queues are those of its site."""

    class State(models.TextChoices):
        ACTIVE = "ACTIVE"
        INACTIVE = "INACTIVE"

    class Bare(models.TextChoices):
        NO = "", "no"
        ONLY = "only", "only (full-chain workflows only)"
        ALLOW = "allow", "allow (full-chain and normal workflows)"

    name = models.CharField(max_length=128, unique=True)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="nuclei")
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    bare_nucleus = models.CharField(
        "bareNucleus", max_length=8, choices=Bare.choices, blank=True, default=""
    )
    transfer_backlog = models.BooleanField(
        default=False, help_text="long transfer backlogs: skipped unless the task's t1Weight < 0"
    )

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "nuclei"

    def __str__(self) -> str:
        return self.name


class Storage(models.Model):
    """A storage endpoint (DDM endpoint)."""

    name = models.CharField(max_length=128, unique=True)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="storages")
    nucleus = models.ForeignKey(
        Nucleus, null=True, blank=True, on_delete=models.SET_NULL, related_name="storages"
    )
    space_free = models.FloatField("free (GB)", default=0, validators=[MinValueValidator(0)])
    space_expired = models.FloatField("expired (GB)", default=0, validators=[MinValueValidator(0)])
    space_total = models.FloatField("total (GB)", default=0, validators=[MinValueValidator(0)])
    is_tape = models.BooleanField(default=False)
    read_lan = models.BooleanField(default=True)
    write_lan = models.BooleanField(default=True)
    read_wan = models.BooleanField(default=True)
    write_wan = models.BooleanField(default=True)
    blacklisted = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PandaQueue(models.Model):
    """A PanDA queue (PQ) with every attribute the brokerage checks read (CRIC's schema)."""

    class Status(models.TextChoices):
        ONLINE = "online"
        OFFLINE = "offline"
        TEST = "test"
        BROKEROFF = "brokeroff"
        PAUSED = "paused"

    class Type(models.TextChoices):
        PRODUCTION = "production"
        ANALYSIS = "analysis"
        UNIFIED = "unified"

    name = models.CharField(max_length=128, unique=True)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="panda_queues")
    computing_element = models.ForeignKey(
        "matcher.ComputingElement",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="panda_queues",
    )
    nucleus = models.ForeignKey(
        Nucleus,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="queues",
        help_text="set when the queue belongs to a nucleus (else it is a satellite)",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ONLINE)
    queue_type = models.CharField(
        "type", max_length=16, choices=Type.choices, default=Type.PRODUCTION
    )
    core_count = models.PositiveIntegerField("coreCount", default=1)
    max_core_count = models.PositiveIntegerField("maxCoreCount", null=True, blank=True)
    minrss = models.PositiveIntegerField("minrss (MB per core)", default=0)
    maxrss = models.PositiveIntegerField("maxrss (MB per core)", default=0, help_text="0: none")
    maxwdir = models.PositiveIntegerField("maxwdir (MB)", default=0, help_text="0: no limit")
    mintime = models.PositiveIntegerField("mintime (s)", default=0)
    maxtime = models.PositiveIntegerField("maxtime (s)", default=0, help_text="0: no limit")
    corepower = models.FloatField("corepower (HS06)", default=10.0)
    cpu_efficiency = models.FloatField("cpu efficiency (%)", default=90.0)
    pledgedcpu = models.IntegerField("pledgedcpu", default=0, help_text="-1: opportunistic")
    max_diskio = models.FloatField(
        "maxDiskIO (kB/s per core)", null=True, blank=True, help_text="empty: MAX_DISKIO_DEFAULT"
    )
    diskio_per_core = models.FloatField(
        "average diskIO of running jobs (kB/s per core)", default=0.0
    )
    releases = models.JSONField(default=list, blank=True, help_text='a list, ["ANY"] or ["AUTO"]')
    wnconnectivity = models.CharField(
        max_length=32, blank=True, help_text="network_connectivity#ip_stack, e.g. full#IPv4"
    )
    direct_access_lan = models.BooleanField(
        default=False, help_text="reads input directly from the local storage"
    )
    transferring_limit = models.PositiveIntegerField(null=True, blank=True, help_text="empty: 2000")
    num_slots = models.IntegerField("numSlots", null=True, blank=True)
    fairsharepolicy = models.CharField(max_length=512, blank=True)
    site_class = models.CharField(
        "site class",
        max_length=4,
        choices=[("hi", "hi"), ("mid", "mid"), ("lo", "lo")],
        default="mid",
        help_text="analysis appropriateness (new analysis weight)",
    )
    workflow = models.CharField(
        max_length=64, blank=True, help_text="CRIC workflow: picks HEARTBEAT_TIMEOUT_<workflow>"
    )
    catchall = models.CharField(max_length=512, blank=True)
    input_storage = models.ForeignKey(
        Storage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    output_storage = models.ForeignKey(
        Storage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    software = models.JSONField(
        default=dict, blank=True, help_text="cmtconfigs, containers, cvmfs, architectures, tags"
    )
    gpu_summary = models.JSONField(
        default=list,
        blank=True,
        help_text="worker-node GPU rows: vendor, model, vram, architecture, "
        "framework_version, driver_version",
    )
    # Also derived from our pilots and jobs each cycle; the later of the two counts.
    last_pilot = models.DateTimeField(null=True, blank=True, help_text="last getJob/updateJob")
    last_start = models.DateTimeField(null=True, blank=True, help_text="last job start")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class NetworkLink(models.Model):
    """Network metrics from a satellite site to a nucleus."""

    source = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="links")
    nucleus = models.ForeignKey(Nucleus, on_delete=models.CASCADE, related_name="links")
    queued_files = models.PositiveIntegerField(null=True, blank=True)
    mbps_1h = models.FloatField("MB/s (1 h)", null=True, blank=True)
    mbps_1d = models.FloatField("MB/s (1 d)", null=True, blank=True)
    mbps_1w = models.FloatField("MB/s (1 w)", null=True, blank=True)
    closeness = models.IntegerField(
        null=True, blank=True, help_text="0 best … 11 worst, -1 blocked"
    )
    updated = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["nucleus", "source"]
        constraints = [
            models.UniqueConstraint(fields=["source", "nucleus"], name="link_source_nucleus")
        ]

    def __str__(self) -> str:
        return f"{self.source} → {self.nucleus}"


class Dataset(models.Model):
    name = models.CharField(max_length=255, unique=True)
    n_files = models.PositiveIntegerField(default=0)
    size_gb = models.FloatField(default=0, validators=[MinValueValidator(0)])

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Replica(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="replicas")
    storage = models.ForeignKey(Storage, on_delete=models.CASCADE, related_name="replicas")
    files = models.PositiveIntegerField(default=0)
    size_gb = models.FloatField(default=0, validators=[MinValueValidator(0)])
    complete = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "storage"], name="replica_dataset_storage")
        ]

    def __str__(self) -> str:
        return f"{self.dataset} at {self.storage}"


class GlobalShare(models.Model):
    """A global share (gshare) with its target fraction of the running cores."""

    name = models.CharField(max_length=64, unique=True)
    target_pct = models.FloatField(
        "target (%)", validators=[MinValueValidator(0), MaxValueValidator(100)]
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.target_pct:g}%)"


class UserQuota(models.Model):
    """A user's global disk quota (Rucio's, for the analysis throttle)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    disk_quota_gb = models.FloatField(validators=[MinValueValidator(0)])
    disk_used_gb = models.FloatField(default=0, validators=[MinValueValidator(0)])

    def __str__(self) -> str:
        return f"{self.user}: {self.disk_used_gb:g} of {self.disk_quota_gb:g} GB"


class TaskStatus(models.TextChoices):
    ASSIGNING = "assigning", "assigning (waiting for a nucleus)"
    READY = "ready", "ready (jobs to broker)"
    PENDING = "pending"
    THROTTLED = "throttled"
    RUNNING = "running", "running (jobs brokered)"
    # Final (JEDI's): every job ended, all of them finished / some finished / none finished.
    DONE = "done", "done (every job finished)"
    FINISHED = "finished", "finished (some jobs did not)"
    FAILED = "failed", "failed (no job finished)"


class Task(models.Model):
    class Kind(models.TextChoices):
        PRODUCTION = "production"
        ANALYSIS = "analysis"

    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PRODUCTION)
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    owner_group = models.ForeignKey(GridGroup, on_delete=models.PROTECT, related_name="+")
    # Empty: the grid's one Setup, the DefaultSetup parameter, written in on save. Not a callable
    # default: an unsaved Task (the brokerage's own probes, unit tests) must not read the database.
    setup = models.CharField(
        max_length=64, blank=True, default="", help_text="empty: the DefaultSetup parameter"
    )
    status = models.CharField(max_length=16, choices=TaskStatus.choices)
    status_reason = models.CharField(max_length=255, blank=True)
    retry_after = models.DateTimeField(null=True, blank=True, help_text="pending until")
    created = models.DateTimeField()
    modified = models.DateTimeField()
    # -- the parameters the brokerage reads
    priority = models.IntegerField("taskPriority", default=500)
    processing_type = models.CharField("processingType", max_length=64, default="simul")
    gshare = models.CharField(max_length=64, default="MC Simulation")
    core_count = models.PositiveIntegerField("coreCount", default=1)
    max_core_count = models.PositiveIntegerField("maxCoreCount", null=True, blank=True)
    ram_count = models.PositiveIntegerField("ramCount (MB)", default=2000)
    base_ram_count = models.PositiveIntegerField("baseRamCount (MB)", default=0)
    ram_unit = models.CharField("ramCountUnit", max_length=16, default="MBPerCore")
    out_disk_count = models.FloatField("outDiskCount", default=0)
    out_disk_unit = models.CharField("outDiskCountUnit", max_length=16, default="MB")
    work_disk_count = models.FloatField("workDiskCount (MB)", default=0)
    walltime = models.PositiveIntegerField("walltime (s)", null=True, blank=True)
    base_walltime = models.PositiveIntegerField("baseWalltime (s)", default=0)
    cpu_time = models.FloatField("cpuTime (HS06 s per event)", default=0)
    io_intensity = models.FloatField("ioIntensity (kB/s)", null=True, blank=True)
    disk_io = models.FloatField("diskIO (kB/s)", null=True, blank=True)
    t1_weight = models.IntegerField("t1Weight", default=0)
    task_broker_on_master = models.BooleanField("taskBrokerOnMaster", default=False)
    input_pre_staging = models.BooleanField("inputPreStaging", default=False)
    architecture = models.CharField(max_length=512, blank=True)
    # Parsed once at submission (architecture.parse); the brokerage's checks and the pages read
    # this, never the text.
    architecture_spec = models.JSONField(
        default=no_architecture, blank=True, help_text="parsed architecture"
    )
    container_name = models.CharField(max_length=255, blank=True)
    only_tags_for_fc = models.BooleanField("onlyTagsForFC", default=False)
    release = models.CharField(
        max_length=128, blank=True, help_text="Project-version (release/cache) or a nightly"
    )
    ip_connectivity = models.CharField("ipConnectivity", max_length=32, blank=True)
    full_chain = models.CharField("fullChain", max_length=8, blank=True)
    working_group = models.CharField("workingGroup", max_length=64, blank=True)
    direct_access_only = models.BooleanField("use direct access only", default=False)
    scout = models.BooleanField(default=False)
    merge = models.BooleanField(default=False)
    site = models.CharField(max_length=512, blank=True, help_text="pre-assigned queues, commas")
    # -- analysis tasks
    task_class = models.CharField(
        "task class",
        max_length=1,
        choices=[("S", "S"), ("A", "A"), ("B", "B"), ("C", "C")],
        default="A",
        help_text="time sensitivity (User Analysis throttle and the new analysis weight)",
    )
    included_site = models.CharField("includedSite", max_length=512, blank=True)
    excluded_site = models.CharField("excludedSite", max_length=512, blank=True)
    avoid_vp = models.BooleanField("avoidVP", default=False)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    n_jobs = models.PositiveIntegerField(default=1)
    n_events_per_job = models.PositiveIntegerField(default=1000)
    job_cpu_time = models.PositiveIntegerField(
        "CPU time per job (s)", default=3600, help_text="what the TaskQueues bucket"
    )
    nucleus = models.ForeignKey(
        Nucleus, null=True, blank=True, on_delete=models.PROTECT, related_name="tasks"
    )
    datasets = models.ManyToManyField(Dataset, through="TaskDataset", related_name="tasks")
    # -- what its jobs run (docs/user-guide.md, Tasks that run real work): as a job's payload,
    # %RNDM:N in an argument, a variable's value or an output pattern read as N + the job's
    # number (0, 1, ...). Empty executable: nothing to run (simulated work).
    executable = models.CharField(max_length=1024, blank=True, default="", db_default="")
    arguments = models.JSONField(default=list, db_default=[], blank=True)
    environment = models.JSONField(default=dict, db_default={}, blank=True)
    output_sandbox = models.JSONField(
        default=list, db_default=[], blank=True, help_text="file names or glob patterns"
    )
    # The input files each job is given: [{"name", "size"}] (the bytes are stored per job).
    input_sandbox = models.JSONField(default=list, db_default=[], blank=True)

    objects = OwnedQuerySet.as_manager()  # visible_to(user): shares.ownership's rule

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "retry_after"], name="task_status_retry")]

    def __str__(self) -> str:
        return f"Task {self.pk} {self.name}"

    def save(self, *args, **kwargs):
        if not self.setup:
            self.setup = gdpconfig.get("DefaultSetup")
        super().save(*args, **kwargs)


class TaskDataset(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="inputs")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="+")
    master = models.BooleanField(default=True, help_text="primary input (else secondary)")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "dataset"], name="taskdataset_unique")
        ]

    def __str__(self) -> str:
        return f"{self.dataset} ({'master' if self.master else 'secondary'})"


class TaskJob(models.Model):
    """A job a task generated, with the queue its brokerage chose first."""

    # job.task_job: a job's task, read by the matcher's pages and API without importing brokerage.
    job = models.OneToOneField(
        Job, primary_key=True, on_delete=models.CASCADE, related_name="task_job"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="task_jobs")
    queue = models.ForeignKey(
        PandaQueue, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    n_events = models.PositiveIntegerField(default=0)
    input_files = models.PositiveIntegerField(default=0)
    input_size_mb = models.FloatField(default=0)
    # JEDI's retries: a job closed by the defined timeout is retried as a new job (attempt + 1);
    # the closed one is `reassigned` and no longer counts for its task's final state.
    # db_default: bulk loads name only the columns they fill.
    attempt = models.PositiveSmallIntegerField(default=1, db_default=1)
    reassigned = models.BooleanField(
        default=False, db_default=False, help_text="closed and retried as a new job"
    )
    # The job this one retries (attempt - 1): a task page links each chain, original → retry.
    # No database constraint: the retention cycle may delete the older job first.
    retry_of = models.ForeignKey(
        Job,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )

    class Meta:
        indexes = [models.Index(fields=["queue"], name="taskjob_queue")]

    def __str__(self) -> str:
        return f"job {self.job_id} of task {self.task_id}"


class BrokerageRun(models.Model):
    """One brokerage decision for one task: every candidate and why it was kept or removed."""

    class Kind(models.TextChoices):
        TASK = "task", "task → nucleus"
        JOB = "job", "jobs → queues"
        ANALYSIS = "analysis", "analysis jobs → queues"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="brokerage_runs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    cycle_run = models.BigIntegerField(null=True, blank=True, help_text="CycleRun id")
    at = models.DateTimeField()
    outcome = models.CharField(max_length=16, help_text="assigned, pending or throttled")
    chosen = models.JSONField(default=list, help_text="the nucleus, or the best queues")
    message = models.CharField(max_length=255, blank=True)
    # Every candidate as rows [name, check, values] or [name, "", factors, weight], JSON then
    # zlib: a cycle writes one small row per task although each has 500 candidates.
    trace = models.BinaryField(default=bytes)
    removed_by = models.JSONField(default=dict, help_text="check → number of candidates removed")

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["task", "-id"], name="brokeragerun_task"),
            # Home's recent brokerage failures: the newest runs that placed nothing.
            models.Index(
                fields=["-id"],
                condition=models.Q(outcome__in=["pending", "throttled"]),
                name="brokeragerun_failed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} for task {self.task_id} at {self.at:%Y-%m-%d %H:%M}"

    @property
    def removed_counts(self) -> dict[str, int]:
        """Check → candidates removed. A throttled analysis run stores its throttle (a dict of
        the values compared) under "throttle" instead: it is no count."""
        return {
            k: v
            for k, v in self.removed_by.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }

    @property
    def throttle(self) -> dict | None:
        """The throttle that held a throttled run back, with the values it compared."""
        held = self.removed_by.get("throttle") if isinstance(self.removed_by, dict) else None
        return held if isinstance(held, dict) else None

    @staticmethod
    def encode_trace(rows: list) -> bytes:
        return zlib.compress(orjson.dumps(rows), 1)

    @property
    def candidates(self) -> list[dict]:
        """[{"name", "removed_by", "values"} or {"name", "weight", "factors"}, …]"""
        if not self.trace:
            return []
        out = []
        for row in orjson.loads(zlib.decompress(bytes(self.trace))):
            if row[1]:
                out.append({"name": row[0], "removed_by": row[1], "values": row[2]})
            else:
                out.append({"name": row[0], "weight": row[3], "factors": row[2]})
        return out


# For drf-spectacular's ENUM_NAME_OVERRIDES (it needs module-level names).
TASK_KIND_CHOICES = Task.Kind.choices
BROKERAGE_RUN_KIND_CHOICES = BrokerageRun.Kind.choices
