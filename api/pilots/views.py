"""Pilots and their reports: a pilot asks for a job (/match/), registers, reports its own status,
and reports the status and heartbeats of the jobs it was given, and of no other."""

import time
from itertools import groupby
from operator import itemgetter

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from api.core.codec import JsonOnlyNegotiation, OrjsonRenderer
from api.core.export import ExportMixin
from api.core.fields import (
    RejectUnknownFieldsMixin,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)
from api.matcher import resources as r
from api.pilots.access import pilot_job as _pilot_job
from api.shares.mixins import VisibleToUserMixin
from core import metrics
from matcher import topology
from matcher.lifecycle import FINAL_STATES
from matcher.models import RESULT_FIELDS, JobStatus
from matcher.services import jobs as job_moves
from pilots import output as pilot_output
from pilots import registry as pilot_registry
from pilots import services as service
from pilots.models import Pilot, PilotLogLine, PilotStatus
from sandboxes import services as sandboxes
from web.pilots.filters import PilotFilterSet


class PilotSerializer(serializers.ModelSerializer):
    class Meta:
        model = Pilot
        fields = [
            "id",
            "reference",
            "task_queue_id",
            "owner_dn",
            "owner_group",
            "private",
            "broker",
            "grid_type",
            "submit_pool",
            "site",
            "ce",
            "status",
            "submitted",
            "status_changed",
            "jobs_done",
            "requirements",
            "hostname",
            "node",
        ]
        read_only_fields = fields


class PilotRegisterSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    reference = StrictCharField(max_length=255)
    site = StrictCharField(max_length=128)
    ce = StrictCharField(max_length=128, required=False, allow_blank=True, default="")
    hostname = StrictCharField(
        max_length=255, required=False, allow_blank=True, help_text="the worker node's host name"
    )
    node = serializers.DictField(
        required=False,
        help_text="The worker node: cores, memory_mb, os, cpu, pilot_version (at most "
        f"{pilot_output.NODE_KEYS} keys; values numbers or text).",
    )

    def validate_node(self, value):
        if len(value) > pilot_output.NODE_KEYS:
            raise serializers.ValidationError(f"At most {pilot_output.NODE_KEYS} keys.")
        for key, item in value.items():
            if isinstance(item, dict | list):
                raise serializers.ValidationError(f"{key}: a number or text, not {item!r:.40}.")
        return value

    def validate_site(self, value):
        if not topology.site_exists(value):
            raise serializers.ValidationError(f"Unknown site {value}.")
        return value

    def validate(self, attrs):
        ce = attrs["ce"]
        if ce:
            site = topology.site_of_ce(ce)
            if site is None:
                raise serializers.ValidationError({"ce": [f"Unknown CE {ce}."]})
            if site != attrs["site"]:
                raise serializers.ValidationError(
                    {"ce": [f"CE {ce} belongs to {site}, not {attrs['site']}."]}
                )
        return attrs


class PilotLogLineSerializer(serializers.ModelSerializer):
    class Meta:
        model = PilotLogLine
        fields = ["at", "level", "job_id", "message"]
        read_only_fields = fields


class PilotLogEntrySerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    level = serializers.ChoiceField(choices=pilot_output.LEVELS, required=False, default="INFO")
    message = StrictCharField(max_length=pilot_output.MAX_LINE_CHARS, trim_whitespace=False)
    job_id = StrictIntegerField(required=False, min_value=1, allow_null=True, default=None)


class PilotLogReportSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    lines = PilotLogEntrySerializer(
        many=True,
        allow_empty=False,
        max_length=pilot_output.MAX_LINES_PER_REPORT,
        help_text=f"At most {pilot_output.MAX_LINES_PER_REPORT} lines a report; the pilot's "
        f"last {pilot_output.MAX_LINES} lines are kept.",
    )


class PilotReportSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    status = serializers.ChoiceField(choices=PilotStatus.choices)
    reason = StrictCharField(max_length=255, required=False, allow_blank=True, default="")


JOB_REPORT_CHOICES = [
    (s.value, s.value)
    for s in (
        JobStatus.STARTING,
        JobStatus.RUNNING,
        JobStatus.HOLDING,
        JobStatus.TRANSFERRING,
        JobStatus.FINISHED,
        JobStatus.FAILED,
        JobStatus.CANCELLED,
    )
]


class NonNegativeFloatField(serializers.FloatField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class JobReportSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    status = serializers.ChoiceField(
        choices=JOB_REPORT_CHOICES,
        help_text="cancelled: the pilot stopped the payload of a job killed while it held it.",
    )
    pilot_reference = StrictCharField(max_length=255)
    reason = StrictCharField(max_length=255, required=False, allow_blank=True, default="")
    exit_code = StrictIntegerField(required=False, min_value=-(2**31), max_value=2**31 - 1)
    application_status = StrictCharField(max_length=255, required=False, allow_blank=True)
    cpu_seconds = NonNegativeFloatField(required=False, min_value=0, max_value=1e12)
    wall_seconds = NonNegativeFloatField(required=False, min_value=0, max_value=1e12)
    peak_memory_kb = StrictIntegerField(required=False, min_value=0, max_value=2**62)
    hostname = StrictCharField(max_length=255, required=False, allow_blank=True)
    output_truncated = StrictCharField(
        max_length=1024,
        required=False,
        allow_blank=True,
        help_text="What of the outputs the pilot cut or left out to fit MaxOutputSandboxBytes, "
        "or why none went up; absent or empty when everything is there.",
    )
    error_code = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=99999,
        help_text="With failed: the pilot's error code (PanDA's pilotErrorCode, matcher.errors); "
        "the server classifies one from the exit code when absent.",
    )
    pilot_failure = StrictBooleanField(
        required=False,
        default=False,
        help_text="With failed: the pilot stopped the payload for a reason of its own (its "
        "lifetime ended), not the job's. The job is rescheduled, the reason in its history.",
    )

    def validate(self, attrs):
        if attrs.get("pilot_failure") and attrs["status"] != JobStatus.FAILED:
            raise serializers.ValidationError({"pilot_failure": ["Only with status failed."]})
        return attrs


class HeartbeatSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    pilot_reference = StrictCharField(max_length=255)
    output_tail = StrictCharField(
        max_length=4096,
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="The payload's last lines of stdout.",
    )


class CommandsSerializer(serializers.Serializer):
    commands = serializers.ListField(
        child=serializers.ChoiceField(choices=["kill"]),
        help_text="kill: the job was killed; stop the payload's process group and report it "
        "cancelled.",
    )


class PilotViewSet(
    VisibleToUserMixin, ExportMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet
):
    """Pilots: staff see all; others the pilots acting with their credential or for their DN.
    Filtered, sorted and exported as on the pilots page."""

    queryset = Pilot.objects.all()
    serializer_class = PilotSerializer
    filterset_class = PilotFilterSet
    export_name = "pilots"
    lookup_value_regex = r"\d+"

    @extend_schema(
        summary="Register a pilot",
        request=PilotRegisterSerializer,
        responses={
            200: PilotSerializer,
            201: PilotSerializer,
            400: OpenApiResponse(description="bad reference, unknown site or CE"),
        },
    )
    def create(self, request, *args, **kwargs):
        """A pilot registers: the caller's own pilot with this reference, created if new (a
        pilot the director submitted finds its own record). Another credential's pilot with
        the same reference is another pilot."""
        body = PilotRegisterSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        pilot, created = pilot_registry.register_pilot(
            request.user, data["reference"], data["site"], data["ce"]
        )
        if data.get("hostname") or data.get("node"):
            pilot_output.set_node(pilot.pk, data.get("hostname", ""), data.get("node"))
            pilot.refresh_from_db(fields=["hostname", "node"])
        answer = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(PilotSerializer(pilot).data, status=answer)

    @extend_schema(
        summary="Report a pilot's status",
        request=PilotReportSerializer,
        responses={200: PilotSerializer, 403: OpenApiResponse(), 409: OpenApiResponse()},
    )
    @action(detail=True, methods=["post"])
    def status(self, request, pk=None):
        """The pilot reports its own status (Running, Done, Failed...)."""
        pilot = get_object_or_404(self.get_queryset(), pk=pk)
        if not service.pilot_may_report(request.user, pilot):
            raise PermissionDenied("only the pilot's own credential reports its status")
        body = PilotReportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            pilot = service.set_pilot_status(
                pilot.pk, body.validated_data["status"], body.validated_data["reason"]
            )
        except service.PilotError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(PilotSerializer(pilot).data)

    @extend_schema(
        methods=["GET"],
        summary="Read a pilot's log",
        description="The pilot's own log: its last lines, oldest first.",
    )
    @extend_schema(
        methods=["POST"],
        summary="Append to a pilot's log",
        description="Lines of the pilot's own log, kept with the job each names (only the "
        "pilot's own credential may, else 403).",
    )
    @extend_schema(
        request=PilotLogReportSerializer,
        responses={
            200: PilotLogLineSerializer(many=True),
            201: OpenApiResponse(description="the lines were kept"),
            400: OpenApiResponse(description="bad lines"),
            403: OpenApiResponse(),
        },
    )
    @action(detail=True, methods=["get", "post"], pagination_class=None)
    def log(self, request, pk=None):
        """The pilot's own log: GET its last lines, oldest first; POST appends lines (only
        the pilot's own credential)."""
        pilot = get_object_or_404(self.get_queryset(), pk=pk)
        if request.method == "GET":
            lines = pilot_output.lines_of(pilot.pk)
            return Response(PilotLogLineSerializer(lines, many=True).data)
        if not service.pilot_may_report(request.user, pilot):
            raise PermissionDenied("only the pilot's own credential reports its log")
        body = PilotLogReportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        written = 0
        for job_id, entries in groupby(body.validated_data["lines"], key=itemgetter("job_id")):
            lines = [(e["level"], e["message"]) for e in entries]
            written += pilot_output.record(pilot.pk, lines, job_id)
        return Response({"lines": written}, status=status.HTTP_201_CREATED)


class JobReportsMixin:
    """The job viewset's actions for the job's pilot (api/matcher/views.py JobViewSet): it
    reports on the job (/jobs/{id}/status/, /jobs/{id}/heartbeat/)."""

    @extend_schema(
        summary="Report a job's progress (its pilot)",
        request=JobReportSerializer,
        responses={200: OpenApiResponse(), 403: OpenApiResponse(), 409: OpenApiResponse()},
    )
    @action(detail=True, methods=["post"], url_path="status")
    def report_status(self, request, pk=None):
        """The job's pilot reports it starting, running, finished or failed."""
        body = JobReportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        job, pilot_id = _pilot_job(request, pk, data["pilot_reference"])
        results = {k: data[k] for k in RESULT_FIELDS if k in data}
        if data["pilot_failure"]:
            return self._pilot_failure(job.pk, data["reason"], pilot_id, results)
        try:
            with transaction.atomic():
                job = service.report_job(
                    job.pk, data["status"], data["reason"], pilot_id=pilot_id, results=results
                )
                if job.status in FINAL_STATES:  # its staged outputs are shown from now on
                    sandboxes.complete_outputs(job.pk)
        except service.PilotError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response({"id": job.pk, "status": job.status})

    def _pilot_failure(self, job_id: int, reason: str, pilot_id, results: dict) -> Response:
        """The job goes back to wait (or fails at MaxRescheduling, when its outputs so far are
        shown)."""
        try:
            job = job_moves.report_pilot_failure(job_id, reason, pilot_id, results)
        except (job_moves.NotHeld, job_moves.MoveRefused) as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        if job.status in FINAL_STATES:
            sandboxes.complete_outputs(job.pk)
        return Response({"id": job.pk, "status": job.status})

    @extend_schema(
        summary="A job's heartbeat (its pilot)",
        request=HeartbeatSerializer,
        responses={
            200: CommandsSerializer,
            204: OpenApiResponse(description="nothing to do"),
            403: OpenApiResponse(),
            409: OpenApiResponse(),
        },
    )
    @action(detail=True, methods=["post"])
    def heartbeat(self, request, pk=None):
        """The job's pilot says it is alive, with the payload's last lines of output: only
        while the job is in a state a pilot holds. A job killed while it held it: 200 with
        the command to kill the payload."""
        body = HeartbeatSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        job, pilot_id = _pilot_job(request, pk, body.validated_data["pilot_reference"])
        try:
            commands = service.heartbeat(job.pk, pilot_id, body.validated_data.get("output_tail"))
        except service.PilotError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        if commands:
            return Response({"commands": commands})
        return Response(status=status.HTTP_204_NO_CONTENT)


class MatchViewSet(viewsets.ViewSet):
    """A pilot asks for a job: 200 with exactly one job claimed for it, or 204 when none fits."""

    serializer_class = r.ResourceDescriptionSerializer
    # Pilots speak JSON: no browsable page to negotiate on the busiest endpoint.
    renderer_classes = [OrjsonRenderer]
    content_negotiation_class = JsonOnlyNegotiation

    @extend_schema(
        summary="Ask for a job (a pilot)",
        request=r.ResourceDescriptionSerializer,
        responses={
            200: r.MatchedJobSerializer,
            204: OpenApiResponse(description="no waiting job fits this resource"),
            400: OpenApiResponse(description="bad resource description"),
        },
    )
    def create(self, request):
        body = r.ResourceDescriptionSerializer(data=request.data, context={"claim": True})
        body.is_valid(raise_exception=True)
        resource = body.resource(request.user)
        reference = body.validated_data.get("pilot_reference", "")
        claimant = pilot_registry.resolve_pilot(request.user, reference, resource)
        started = time.perf_counter()
        found = pilot_registry.claim(resource, claimant)
        metrics.observe_match(time.perf_counter() - started, claimed=found is not None)
        if found is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(r.MatchedJobSerializer.describe(found))
