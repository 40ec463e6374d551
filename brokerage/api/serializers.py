from rest_framework import serializers

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
from config.api.fields import NamedRelatedField, RejectUnknownFieldsMixin, StrictCharField
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


class TaskInputSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    dataset = NamedRelatedField(slug_field="name", queryset=Dataset.objects.all())
    master = serializers.BooleanField(default=True)


class TaskSubmitSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    """A task: PanDA's parameters, its input datasets; it generates `n_jobs` jobs."""

    owner_group = NamedRelatedField(slug_field="name", queryset=GridGroup.objects.all())
    nucleus = NamedRelatedField(
        slug_field="name", queryset=Nucleus.objects.all(), required=False, allow_null=True
    )
    parent = serializers.PrimaryKeyRelatedField(
        queryset=Task.objects.all(), required=False, allow_null=True
    )
    inputs = TaskInputSerializer(many=True, required=False, default=list)
    name = StrictCharField(max_length=200)
    ram_unit = serializers.ChoiceField(choices=["MBPerCore", "MB"], default="MBPerCore")
    out_disk_unit = serializers.ChoiceField(
        choices=["MB", "kB", "MBPerEvent", "kBPerEvent"], default="MB"
    )
    full_chain = serializers.ChoiceField(
        choices=["", "only", "require", "capable"], default="", allow_blank=True
    )
    n_jobs = serializers.IntegerField(min_value=1, max_value=10000, default=1)
    priority = serializers.IntegerField(min_value=0, max_value=100000, default=500)

    class Meta:
        model = Task
        fields = [*TASK_PARAMETERS, "owner_group", "nucleus", "parent", "inputs"]

    def validate_architecture(self, value):
        try:
            architecture.parse(value)
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
    nucleus = serializers.CharField(source="nucleus.name", read_only=True, default=None)
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
