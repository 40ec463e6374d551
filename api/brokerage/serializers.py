import re
from urllib.parse import quote

from django.db import models
from rest_framework import serializers
from rest_framework.fields import empty

from api.core.fields import (
    NamedRelatedField,
    NameField,
    RejectUnknownFieldsMixin,
    StrictBooleanField,
    StrictCharField,
)
from api.matcher.payload import (
    MAX_ARGUMENT_CHARS,
    MAX_ARGUMENTS,
    MAX_OUTPUT_PATTERNS,
    EnvironmentField,
    TextListField,
    executable_problem,
)
from api.matcher.serializers import MAX_CPU_TIME
from brokerage import architecture, lifecycle
from brokerage.models import (
    BrokerageRun,
    Dataset,
    GlobalShare,
    NetworkLink,
    Nucleus,
    PandaQueue,
    Replica,
    Storage,
    Task,
    UserQuota,
)
from brokerage.services.submission import sequence_problem
from matcher.filenames import relative_path_problem
from matcher.models import Site
from shares.models import GridGroup, User

TASK_PARAMETERS = [
    "kind",
    "name",
    "setup",
    "priority",
    "processing_type",
    "gshare",
    "core_count",
    "max_core_count",
    "ram_count",
    "base_ram_count",
    "ram_unit",
    "out_disk_count",
    "out_disk_unit",
    "work_disk_count",
    "walltime",
    "base_walltime",
    "cpu_time",
    "io_intensity",
    "disk_io",
    "t1_weight",
    "task_broker_on_master",
    "input_pre_staging",
    "architecture",
    "container_name",
    "only_tags_for_fc",
    "release",
    "ip_connectivity",
    "full_chain",
    "working_group",
    "direct_access_only",
    "scout",
    "merge",
    "site",
    "task_class",
    "included_site",
    "excluded_site",
    "avoid_vp",
    "n_jobs",
    "n_events_per_job",
    "job_cpu_time",
]
# What its jobs run (brokerage.services.submission.job_payload).
PAYLOAD_PARAMETERS = ["executable", "arguments", "environment", "output_sandbox"]
# A payload job's CPU time when the task gives none: within the seed's first CPU segment
# (500 s), which the local worker node's pilots (an hour's lifetime) take; the model's 3600 s
# would sit in the 5000 s segment, which none of them can.
PAYLOAD_JOB_CPU_TIME = 300


# Fields that steer brokerage or fairness: the system sets them (submission.submit_task), staff
# may. A user's task_class S would escape the User Analysis throttle, a gshare its share.
STAFF_FIELDS = ("priority", "gshare", "task_class")
SET_BY_STAFF = "set by staff: the system chooses it for your task, leave it out"
# Bounds (PanDA's units, see brokerage/models.py). taskPriority: the seed's thresholds are 800,
# 1000 and 2000; t1Weight: -1 (the seed's one negative value: backlogged nuclei allowed, the
# nucleus's queues only) or a weight 0..1000.
MAX_TASK_PRIORITY = 10_000
MAX_CORES = 256
MAX_RAM_MB = 1_048_576  # 1 TB, per core or per job
MAX_DISK_COUNT = 1e9  # MB or kB, per event or not
MAX_SECONDS = MAX_CPU_TIME  # a year
MAX_CPU_TIME_PER_EVENT = 1e6  # HS06 s: a day of a 10-HS06 core is 864,000
MAX_IO_RATE = 1e7  # kB/s: 10 GB/s
MAX_T1_WEIGHT = 1000
MAX_EVENTS_PER_JOB = 10_000_000
# A queue pattern of includedSite/excludedSite: a queue name with up to 3 * (read as a regexp
# by the analysis brokerage, so nothing else that a regexp would read, nor a costly search).
QUEUE_PATTERN = re.compile(r"[A-Za-z0-9_.-]*(?:\*[A-Za-z0-9_.-]*){1,3}")


def _queue_list(value: str, patterns: bool) -> str:
    """Comma-separated PanDA queue names (and, if allowed, patterns with *), each known or
    matching a known queue: an unknown one would leave the task pending forever."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        return value
    known = set(PandaQueue.objects.values_list("name", flat=True))
    unknown = []
    for name in names:
        if name in known:
            continue
        if patterns and QUEUE_PATTERN.fullmatch(name):
            pattern = re.compile(name.replace("*", ".*"))
            if any(pattern.search(q) for q in known):
                continue
        unknown.append(name)
    if unknown:
        raise serializers.ValidationError(
            f"no such queue: {', '.join(unknown)} (PanDA queue names, commas"
            + (", * for any text)" if patterns else ")")
        )
    return value


class StaffOnlyMixin:
    """A field only staff give: anyone else giving it (any value) is told so, first."""

    def run_validation(self, data=empty):
        if data is not empty and not self.context["request"].user.is_staff:
            raise serializers.ValidationError(SET_BY_STAFF)
        return super().run_validation(data)


class StaffIntegerField(StaffOnlyMixin, serializers.IntegerField):
    pass


class StaffCharField(StaffOnlyMixin, StrictCharField):
    pass


class StaffChoiceField(StaffOnlyMixin, serializers.ChoiceField):
    pass


class TaskInputSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    dataset = NamedRelatedField(slug_field="name", queryset=Dataset.objects.all())
    master = StrictBooleanField(default=True)


class ParentTaskField(serializers.PrimaryKeyRelatedField):
    """The caller's own task or one of their JobSharing groups' (staff: any). Any other id is
    answered as one that does not exist: which task ids exist is not revealed."""

    default_error_messages = {"does_not_exist": "no such task", "incorrect_type": "no such task"}

    def get_queryset(self):
        return Task.objects.visible_to(self.context["request"].user)

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, str)):
            self.fail("does_not_exist", pk_value=data)
        if isinstance(data, str) and not (data.isascii() and data.isdigit()):
            self.fail("does_not_exist", pk_value=data)
        return super().to_internal_value(data)


def _argument_problem(value: str) -> str | None:
    return "must not hold a NUL" if "\x00" in value else sequence_problem(value)


def _pattern_problem(value: str) -> str | None:
    return relative_path_problem(value) or sequence_problem(value)


class TaskSubmitSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    """A task: PanDA's parameters, its input datasets; it generates `n_jobs` jobs. priority,
    gshare and task_class are set by staff only (a user's task gets the system's)."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.BooleanField: StrictBooleanField,
    }

    owner_group = NamedRelatedField(slug_field="name", queryset=GridGroup.objects.all())
    nucleus = NamedRelatedField(
        slug_field="name", queryset=Nucleus.objects.all(), required=False, allow_null=True
    )
    parent = ParentTaskField(queryset=Task.objects.all(), required=False, allow_null=True)
    inputs = TaskInputSerializer(many=True, required=False, default=list)
    name = NameField(max_length=200)
    ram_unit = serializers.ChoiceField(choices=["MBPerCore", "MB"], default="MBPerCore")
    out_disk_unit = serializers.ChoiceField(
        choices=["MB", "kB", "MBPerEvent", "kBPerEvent"], default="MB"
    )
    full_chain = serializers.ChoiceField(
        choices=["", "only", "require", "capable"], default="", allow_blank=True
    )
    n_jobs = serializers.IntegerField(min_value=1, max_value=10000, default=1)
    priority = StaffIntegerField(
        min_value=0, max_value=MAX_TASK_PRIORITY, required=False, help_text="staff only"
    )
    gshare = StaffCharField(max_length=64, required=False, help_text="staff only: a global share")
    task_class = StaffChoiceField(
        choices=Task._meta.get_field("task_class").choices, required=False, help_text="staff only"
    )
    executable = StrictCharField(
        max_length=1024,
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        help_text="What each job runs, as a job's executable; empty: simulated work. Its jobs "
        "go to the real pilots' queues unless site or included_site names queues.",
    )
    arguments = TextListField(
        what="argument",
        max_items=MAX_ARGUMENTS,
        max_chars=MAX_ARGUMENT_CHARS,
        check=_argument_problem,
        help_text="%RNDM:N reads N + the job's number (0, 1, ...), as prun's.",
    )
    environment = EnvironmentField(help_text="values may hold %RNDM:N")
    output_sandbox = TextListField(
        what="output sandbox pattern",
        max_items=MAX_OUTPUT_PATTERNS,
        max_chars=1024,
        check=_pattern_problem,
        help_text="File names or glob patterns each job brings back (may hold %RNDM:N).",
    )

    class Meta:
        model = Task
        fields = [
            *TASK_PARAMETERS,
            *PAYLOAD_PARAMETERS,
            "owner_group",
            "nucleus",
            "parent",
            "inputs",
        ]
        extra_kwargs = {
            "core_count": {"min_value": 1, "max_value": MAX_CORES},
            "max_core_count": {"min_value": 1, "max_value": MAX_CORES},
            "ram_count": {"max_value": MAX_RAM_MB},
            "base_ram_count": {"max_value": MAX_RAM_MB},
            "out_disk_count": {"min_value": 0, "max_value": MAX_DISK_COUNT},
            "work_disk_count": {"min_value": 0, "max_value": MAX_DISK_COUNT},
            "walltime": {"max_value": MAX_SECONDS},
            "base_walltime": {"max_value": MAX_SECONDS},
            "cpu_time": {"min_value": 0, "max_value": MAX_CPU_TIME_PER_EVENT},
            "io_intensity": {"min_value": 0, "max_value": MAX_IO_RATE},
            "disk_io": {"min_value": 0, "max_value": MAX_IO_RATE},
            "t1_weight": {"min_value": -1, "max_value": MAX_T1_WEIGHT},
            "n_events_per_job": {"min_value": 1, "max_value": MAX_EVENTS_PER_JOB},
            "job_cpu_time": {"min_value": 1, "max_value": MAX_CPU_TIME},
        }

    def validate_executable(self, value):
        problem = executable_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value

    def validate_environment(self, value):
        for name, text in value.items():
            if sequence_problem(text):
                raise serializers.ValidationError(f"the value of {name}: {sequence_problem(text)}")
        return value

    def validate_gshare(self, value):
        if not GlobalShare.objects.filter(name=value).exists():
            raise serializers.ValidationError(f"There is no global share named {value}.")
        return value

    def validate_working_group(self, value):
        # The analysis throttle counts a working group's jobs against the group caps instead
        # of the user's: a user names only a group of their own.
        user = self.context["request"].user
        if value and not user.is_staff:
            if not user.grid_groups.filter(name=value).exists():
                raise serializers.ValidationError(f"you are not a member of {value}")
        return value

    def validate_site(self, value):
        return _queue_list(value, patterns=False)

    def validate_included_site(self, value):
        return _queue_list(value, patterns=True)

    def validate_excluded_site(self, value):
        return _queue_list(value, patterns=True)

    def validate_architecture(self, value):
        # Parsed once, here: validate() hands the result to submit_task, which stores it.
        try:
            self._architecture_spec = architecture.parse(value)
        except architecture.ArchitectureError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value

    def validate_release(self, value):
        if value:
            try:
                architecture.parse_release(value)
            except architecture.ArchitectureError as exc:
                raise serializers.ValidationError(str(exc)) from None
        return value

    def validate_ip_connectivity(self, value):
        net, _, stack = value.partition("#")
        if value and (net not in ("full", "http", "none") or stack not in ("", "IPv4", "IPv6")):
            raise serializers.ValidationError(
                "expected network_connectivity#ip_stack: full|http|none, then IPv4|IPv6 or nothing"
            )
        return value

    def validate_owner_group(self, group):
        # As for jobs: a task runs under a group its owner belongs to, staff included.
        user = self.context["request"].user
        if not user.grid_groups.filter(pk=group.pk).exists():
            raise serializers.ValidationError(f"you are not a member of {group.name}")
        return group

    def validate(self, attrs):
        names = [i["dataset"].name for i in attrs.get("inputs", [])]
        if len(names) != len(set(names)):
            raise serializers.ValidationError({"inputs": ["a dataset is listed twice"]})
        low, high = attrs.get("core_count", 1), attrs.get("max_core_count")
        if high is not None and high < low:
            raise serializers.ValidationError({"max_core_count": [f"less than core_count ({low})"]})
        if not attrs.get("executable"):
            given = [f for f in PAYLOAD_PARAMETERS[1:] if attrs.get(f)]
            if given:
                raise serializers.ValidationError(
                    {given[0]: ["goes with an executable: give the executable the jobs run"]}
                )
        else:
            attrs.setdefault("job_cpu_time", PAYLOAD_JOB_CPU_TIME)
        kind = attrs.get("kind", Task.Kind.PRODUCTION)
        group = attrs.get("owner_group")
        if kind == Task.Kind.PRODUCTION and group is not None and not group.production_management:
            # DIRAC: production work needs a group with the ProductionManagement property.
            raise serializers.ValidationError(
                {
                    "kind": [
                        f"production tasks need a group with the ProductionManagement "
                        f"property; {group.name} has none (submit an analysis task, or use "
                        "a production group)"
                    ]
                }
            )
        attrs["architecture_spec"] = getattr(self, "_architecture_spec", None) or (
            architecture.empty()
        )
        return attrs


class TaskListSerializer(serializers.ListSerializer):
    """Counts the jobs of every task of the page in one query."""

    def to_representation(self, data):
        tasks = list(data.all() if hasattr(data, "all") else data)
        self._context["job_counts"] = lifecycle.job_counts(t.pk for t in tasks)
        return super().to_representation(tasks)


class TaskSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    owner_group = serializers.CharField(source="owner_group.name", read_only=True)
    nucleus = serializers.CharField(
        source="nucleus.name", read_only=True, default=None, allow_null=True
    )
    inputs = serializers.SerializerMethodField()
    job_counts = serializers.SerializerMethodField(
        help_text="its jobs by state, retried attempts included (as /api/v1/jobs/?task=id)"
    )

    class Meta:
        list_serializer_class = TaskListSerializer
        model = Task
        fields = [
            "id",
            *TASK_PARAMETERS,
            *PAYLOAD_PARAMETERS,
            "input_sandbox",
            "architecture_spec",
            "owner",
            "owner_group",
            "status",
            "status_reason",
            "retry_after",
            "nucleus",
            "parent",
            "created",
            "modified",
            "inputs",
            "job_counts",
        ]

    def get_inputs(self, task) -> list[dict]:
        return [{"dataset": i.dataset.name, "master": i.master} for i in task.inputs.all()]

    def get_job_counts(self, task) -> dict[str, int]:
        counts = self.context.get("job_counts")
        if counts is None:
            counts = lifecycle.job_counts([task.pk])
        found = counts.get(task.pk)
        return found.by_status if found else {}


class TaskOutputSerializer(serializers.Serializer):
    """One output file of a task's job, shown once the job's final report arrived."""

    job = serializers.IntegerField(source="job_id")
    kind = serializers.CharField()
    name = serializers.CharField()
    size = serializers.IntegerField()
    url = serializers.SerializerMethodField()

    def get_url(self, f) -> str:
        return f"/api/v1/jobs/{f.job_id}/sandbox/{quote(f.name)}"


class TaskClassSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    """Staff reclassify a task (S/A/B/C)."""

    class Meta:
        model = Task
        fields = ["task_class"]


class GlobalShareSerializer(serializers.ModelSerializer):
    class Meta:
        model = GlobalShare
        fields = ["id", "name", "target_pct"]


class UserQuotaSerializer(serializers.ModelSerializer):
    user = NamedRelatedField(slug_field="username", queryset=User.objects.all())

    class Meta:
        model = UserQuota
        fields = ["id", "user", "disk_quota_gb", "disk_used_gb"]


class BrokerageRunSerializer(serializers.ModelSerializer):
    candidates = serializers.ListField(
        child=serializers.DictField(),
        read_only=True,
        help_text='{"name", "removed_by", "values"} or {"name", "weight", "factors"}',
    )

    class Meta:
        model = BrokerageRun
        fields = [
            "id",
            "task",
            "kind",
            "cycle_run",
            "at",
            "outcome",
            "chosen",
            "message",
            "removed_by",
            "candidates",
        ]


class _Named(NamedRelatedField):
    def __init__(self, model, **kw):
        kw.setdefault("queryset", model.objects.all())
        super().__init__(slug_field="name", **kw)


class NucleusSerializer(serializers.ModelSerializer):
    site = _Named(Site)

    class Meta:
        model = Nucleus
        fields = ["id", "name", "site", "state", "bare_nucleus", "transfer_backlog"]


class StorageSerializer(serializers.ModelSerializer):
    site = _Named(Site)
    nucleus = _Named(Nucleus, required=False, allow_null=True)

    class Meta:
        model = Storage
        exclude = []


class PandaQueueSerializer(serializers.ModelSerializer):
    site = _Named(Site)
    nucleus = _Named(Nucleus, required=False, allow_null=True)
    input_storage = _Named(Storage, required=False, allow_null=True)
    output_storage = _Named(Storage, required=False, allow_null=True)

    class Meta:
        model = PandaQueue
        exclude = ["computing_element"]


class NetworkLinkSerializer(serializers.ModelSerializer):
    source = _Named(Site)
    nucleus = _Named(Nucleus)

    class Meta:
        model = NetworkLink
        exclude = []


class ReplicaSerializer(serializers.ModelSerializer):
    storage = _Named(Storage)

    class Meta:
        model = Replica
        fields = ["storage", "files", "size_gb", "complete"]


class DatasetSerializer(serializers.ModelSerializer):
    replicas = ReplicaSerializer(many=True, read_only=True)

    class Meta:
        model = Dataset
        fields = ["id", "name", "n_files", "size_gb", "replicas"]
