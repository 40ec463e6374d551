from django.db.models import OuterRef, Subquery
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.settings import api_settings

from api.core.fields import (
    NamedRelatedField,
    NameField,
    RejectUnknownFieldsMixin,
    StrictCharField,
    StrictIntegerField,
    StrictStringListField,
)
from api.matcher.payload import PayloadFieldsMixin
from api.matcher.resources import FileSizeSerializer
from core import clock, gdpconfig
from matcher.lifecycle import FINAL_STATES, STARTED_STATES
from matcher.models import (
    PAYLOAD_FIELDS,
    RESULT_FIELDS,
    ComputingElement,
    Job,
    JobStatusHistory,
    Site,
    TaskQueue,
)
from matcher.taskqueues import MULTI_VALUED_FIELDS
from sandboxes import services as sandboxes
from shares.models import GridGroup
from web.matcher import job_times

MAX_CPU_TIME = 31_536_000  # one year of CPU seconds


class SubmissionContext:
    """What validating a submission needs to look up, loaded once per request."""

    def __init__(self, user):
        self.user = user
        self._sites = None
        self._ces = None
        self._groups = None

    @property
    def site_names(self) -> set[str]:
        if self._sites is None:
            self._sites = set(Site.objects.values_list("name", flat=True))
        return self._sites

    @property
    def ce_names(self) -> set[str]:
        if self._ces is None:
            self._ces = set(ComputingElement.objects.values_list("name", flat=True))
        return self._ces

    @property
    def groups(self) -> dict[str, GridGroup]:
        if self._groups is None:
            self._groups = {g.name: g for g in self.user.grid_groups.all()}
        return self._groups


class JobSubmitListSerializer(serializers.ListSerializer):
    def to_internal_value(self, data):
        # Counted before any job is validated: a list of a million jobs costs nothing to refuse.
        limit = gdpconfig.get("MaxJobsPerSubmission")
        if isinstance(data, list) and len(data) > limit:
            raise serializers.ValidationError(
                {
                    api_settings.NON_FIELD_ERRORS_KEY: [
                        f"A submission carries at most {limit} jobs (gdpconfig "
                        f"MaxJobsPerSubmission); this list has {len(data)}."
                    ]
                }
            )
        return super().to_internal_value(data)


class JobSubmitSerializer(RejectUnknownFieldsMixin, PayloadFieldsMixin, serializers.Serializer):
    """One job as an API client submits it. The owner is the authenticated user."""

    name = NameField(max_length=128, required=False, allow_blank=True, default="")
    owner_group = StrictCharField(
        max_length=64,
        required=False,
        help_text="A group the user belongs to; may be left out when it belongs to only one.",
    )
    setup = StrictCharField(
        max_length=64,
        required=False,
        help_text="Default: the grid's Setup, the gdpconfig parameter DefaultSetup.",
    )
    cpu_time = StrictIntegerField(min_value=1, max_value=MAX_CPU_TIME, help_text="CPU seconds.")
    sites = StrictStringListField(help_text="Sites that may run the job; empty: any site.")
    banned_sites = StrictStringListField()
    grid_ces = StrictStringListField(help_text="Grid CEs that may run the job; empty: any.")
    platforms = StrictStringListField()
    submit_pools = StrictStringListField()
    pilot_types = StrictStringListField()
    grid_middlewares = StrictStringListField()
    tags = StrictStringListField(help_text="Tags the resource must offer.")
    user_priority = StrictIntegerField(min_value=0, max_value=10, required=False, default=1)

    class Meta:
        list_serializer_class = JobSubmitListSerializer

    @property
    def submission(self) -> SubmissionContext:
        return self.context["submission"]

    def validate_owner_group(self, value):
        group = self.submission.groups.get(value)
        if group is None:
            if GridGroup.objects.filter(name=value).exists():
                raise serializers.ValidationError(
                    f"{self.submission.user.get_username()} is not a member of group {value}."
                )
            raise serializers.ValidationError(f"Unknown group {value}.")
        return group

    def _known(self, values, known, what):
        unknown = [v for v in values if v not in known]
        if unknown:
            raise serializers.ValidationError(f"Unknown {what}: {', '.join(unknown)}.")
        return values

    def validate_sites(self, value):
        return self._known(value, self.submission.site_names, "site")

    def validate_banned_sites(self, value):
        return self._known(value, self.submission.site_names, "site")

    def validate_grid_ces(self, value):
        return self._known(value, self.submission.ce_names, "CE")

    def validate(self, attrs):
        if "owner_group" not in attrs:
            groups = list(self.submission.groups.values())
            if len(groups) != 1:
                raise serializers.ValidationError(
                    {"owner_group": [f"Required: you belong to {len(groups)} groups."]}
                )
            attrs["owner_group"] = groups[0]
        attrs.setdefault("setup", gdpconfig.get("DefaultSetup"))
        return attrs


class JobCreatedSerializer(serializers.ModelSerializer):
    warnings = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        default=list,
        help_text="Requirements no active CE offers (the job is stored, but may never run).",
    )

    class Meta:
        model = Job
        fields = ["id", "status", "task_queue", "warnings"]


class RealTimeField(serializers.DateTimeField):
    """A moment of the grid's clock told on the wall clock (clock.real_time): the grid's clock
    is the simulated one, faster than real time, while the simulated grid drives it; null when
    the real moment is not known (written while that clock stood paused)."""

    def __init__(self, **kwargs):
        super().__init__(read_only=True, allow_null=True, **kwargs)

    def to_representation(self, value):
        real = clock.real_time(value)
        return None if real is None else super().to_representation(real)


CLOCK_CHOICES = ["simulated", "real"]
CLOCK_HELP = (
    "The clock of `created`, `status_changed` and the history's `at`: `simulated` while the "
    "simulated grid's clock (faster than real time) drives the grid, else `real`; the *_real "
    "fields are on the wall clock either way."
)


class JobStatusHistorySerializer(serializers.ModelSerializer):
    at_real = RealTimeField(source="at", help_text="`at` on the wall clock")

    class Meta:
        model = JobStatusHistory
        fields = ["at", "at_real", "from_status", "to_status", "reason"]


def with_start_times(jobs):
    """The jobs with `started`: when their pilot last started them (the latest move into a
    started state from another), one indexed look-up in their history per job shown."""
    entered = (
        JobStatusHistory.objects.filter(job=OuterRef("pk"), to_status__in=STARTED_STATES)
        .exclude(from_status__in=STARTED_STATES)
        .order_by("-at", "-id")
        .values("at")[:1]
    )
    return jobs.annotate(started=Subquery(entered))


class JobSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    owner_dn = serializers.CharField(source="owner.dn", read_only=True, allow_null=True)
    owner_group = serializers.CharField(source="owner_group.name", read_only=True)
    task = serializers.IntegerField(
        source="task_job.task_id",
        read_only=True,
        allow_null=True,
        default=None,
        help_text="the task that generated the job (null: a job submitted on its own)",
    )
    pilot = serializers.IntegerField(
        source="pilot_id",
        read_only=True,
        allow_null=True,
        help_text="the id of the pilot that claimed it last (null: none yet)",
    )
    started = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        default=None,
        help_text="when its pilot last started it (null: never started), on `clock`",
    )
    ended = serializers.SerializerMethodField(
        help_text="when it ended: finished, failed, cancelled or closed (null: not ended), on "
        "`clock`"
    )
    clock = serializers.SerializerMethodField(help_text=CLOCK_HELP)
    created_real = RealTimeField(source="created", help_text="`created` on the wall clock")
    status_changed_real = RealTimeField(
        source="status_changed", help_text="`status_changed` on the wall clock"
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "name",
            "owner",
            "owner_dn",
            "owner_group",
            "setup",
            "cpu_time",
            *MULTI_VALUED_FIELDS,
            "user_priority",
            "status",
            "status_reason",
            "task_queue",
            "task",
            "site",
            "grid_ce",
            "pilot",
            "pilot_reference",
            "started",
            "ended",
            "reschedule_count",
            "created",
            "status_changed",
            "clock",
            "created_real",
            "status_changed_real",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_ended(self, job):
        if job.status not in FINAL_STATES:
            return None
        return serializers.DateTimeField().to_representation(job.status_changed)

    @extend_schema_field(serializers.ChoiceField(choices=CLOCK_CHOICES))
    def get_clock(self, job) -> str:
        return "simulated" if clock.is_simulated() else "real"


class JobDetailSerializer(JobSerializer):
    history = JobStatusHistorySerializer(many=True, read_only=True)
    warnings = serializers.SerializerMethodField(
        help_text="For a job waiting in its TaskQueue: requirements no active CE offers."
    )

    input_sandbox = serializers.SerializerMethodField(
        help_text="The files uploaded with the submission."
    )
    waited_seconds = serializers.SerializerMethodField(
        help_text="Real seconds the job waited to be matched to a pilot, so far while it waits "
        "(null: partly while the simulated clock stood paused)."
    )
    ran_seconds = serializers.SerializerMethodField(
        help_text="Real seconds its pilot was at work on it, so far while it runs (null: it "
        "never started, or partly while the simulated clock stood paused)."
    )

    class Meta(JobSerializer.Meta):
        fields = [
            *JobSerializer.Meta.fields,
            "jdl",
            *PAYLOAD_FIELDS,
            "input_sandbox",
            *RESULT_FIELDS,
            "kill_requested",
            "output_tail",
            "waited_seconds",
            "ran_seconds",
            "history",
            "warnings",
        ]
        read_only_fields = fields

    def _durations(self, job) -> dict:
        if getattr(job, "_real_durations", None) is None:
            job._real_durations = job_times.durations(job, job.history.all())
        return job._real_durations

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_waited_seconds(self, job):
        return self._durations(job)["waited_seconds"]

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_ran_seconds(self, job):
        return self._durations(job)["ran_seconds"]

    @extend_schema_field(FileSizeSerializer(many=True))
    def get_input_sandbox(self, job):
        return [{"name": f["name"], "size": f["size"]} for f in sandboxes.input_manifest(job.pk)]

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_warnings(self, job):
        from web.matcher.selectors import job_warnings

        return job_warnings([job])[job.pk] if job.status == "activated" else []


class PriorityCountSerializer(serializers.Serializer):
    user_priority = serializers.IntegerField()
    jobs = serializers.IntegerField()


class TaskQueueSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    owner_dn = serializers.CharField(source="owner.dn", read_only=True, allow_null=True)
    owner_group = serializers.CharField(source="owner_group.name", read_only=True)
    waiting_jobs = serializers.IntegerField(read_only=True)

    class Meta:
        model = TaskQueue
        fields = [
            "id",
            "owner",
            "owner_dn",
            "owner_group",
            "setup",
            "cpu_time",
            *MULTI_VALUED_FIELDS,
            "priority",
            "waiting_jobs",
            "created",
        ]
        read_only_fields = fields


class TaskQueueDetailSerializer(TaskQueueSerializer):
    jobs_by_priority = serializers.SerializerMethodField()

    class Meta(TaskQueueSerializer.Meta):
        fields = [*TaskQueueSerializer.Meta.fields, "jobs_by_priority"]
        read_only_fields = fields

    @extend_schema_field(PriorityCountSerializer(many=True))
    def get_jobs_by_priority(self, tq):
        from web.matcher.selectors import jobs_by_priority

        return jobs_by_priority(tq.pk)


class SiteSerializer(serializers.ModelSerializer):
    class Meta:
        model = Site
        fields = ["id", "name", "description"]


class ComputingElementSerializer(serializers.ModelSerializer):
    site = NamedRelatedField(slug_field="name", queryset=Site.objects.all())
    platforms = StrictStringListField()
    tags = StrictStringListField()

    class Meta:
        model = ComputingElement
        fields = [
            "id",
            "name",
            "site",
            "ce_type",
            "cpu_time_limit",
            "platforms",
            "tags",
            "max_waiting_pilots",
            "max_running_pilots",
            "status",
        ]


class BulkActionSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    action = serializers.ChoiceField(choices=["kill", "reschedule"])
    ids = serializers.ListField(
        child=StrictIntegerField(min_value=1, max_value=2**63 - 1),
        allow_empty=False,
        help_text="the jobs, at most MaxBulkJobs",
    )

    def validate_ids(self, ids):
        limit = gdpconfig.get("MaxBulkJobs")
        if len(ids) > limit:
            raise serializers.ValidationError(f"{len(ids)} jobs; at most {limit} (MaxBulkJobs)")
        return ids


class BulkRefusalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    reason = serializers.CharField()


class BulkOutcomeSerializer(serializers.Serializer):
    done = serializers.ListField(child=serializers.IntegerField())
    refused = BulkRefusalSerializer(many=True)
