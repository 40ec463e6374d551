"""Pilots and their reports: a pilot registers, reports its own status, and reports the status
and heartbeats of the jobs it was given, and of no other."""

from django.db.models import Q
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from config import clock
from config.api.fields import RejectUnknownFieldsMixin, StrictCharField
from matcher import pilots as service
from matcher.models import Job, JobStatus, Pilot, PilotStatus


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
        ]
        read_only_fields = fields


class PilotRegisterSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    reference = StrictCharField(max_length=255)
    site = StrictCharField(max_length=128)
    ce = StrictCharField(max_length=128, required=False, allow_blank=True, default="")


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
    )
]


class JobReportSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    status = serializers.ChoiceField(choices=JOB_REPORT_CHOICES)
    pilot_reference = StrictCharField(max_length=255)
    reason = StrictCharField(max_length=255, required=False, allow_blank=True, default="")


class HeartbeatSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    pilot_reference = StrictCharField(max_length=255)


class PilotViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Pilots: staff see all; others the pilots acting with their credential or for their DN."""

    serializer_class = PilotSerializer
    filterset_fields = ["status", "site", "ce", "task_queue_id", "submit_pool"]
    lookup_value_regex = r"\d+"

    def get_queryset(self):
        user = self.request.user
        qs = Pilot.objects.all()
        if getattr(self, "swagger_fake_view", False) or user.is_staff:
            return qs
        return qs.filter(Q(credential_user=user) | Q(owner_dn=user.dn or "-"))

    @extend_schema(
        request=PilotRegisterSerializer, responses={200: PilotSerializer, 201: PilotSerializer}
    )
    def create(self, request, *args, **kwargs):
        """A pilot registers (a pilot the director submitted finds its own record)."""
        body = PilotRegisterSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        existing = Pilot.objects.filter(reference=data["reference"]).first()
        if existing is not None:
            if not service.pilot_may_report(request.user, existing):
                raise PermissionDenied("that pilot reference belongs to another credential")
            return Response(PilotSerializer(existing).data)
        group = request.user.grid_groups.first()
        now = clock.now()
        pilot = Pilot.objects.create(
            reference=data["reference"],
            task_queue_id=0,
            owner_dn=request.user.dn or request.user.get_username(),
            owner_group=group.name if group else "",
            private=not (group and group.generic_pilot),
            grid_type="Manual",
            submit_pool="",
            site=data["site"],
            ce=data["ce"],
            status=PilotStatus.SUBMITTED,
            submitted=now,
            status_changed=now,
            credential_user=request.user,
        )
        return Response(PilotSerializer(pilot).data, status=status.HTTP_201_CREATED)

    @extend_schema(
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


def _pilot_job(request, pk, reference) -> Job:
    """The job, if the caller is the credential of the pilot the job was matched to."""
    job = get_object_or_404(Job, pk=pk)
    if request.user.is_staff:
        return job
    pilot = Pilot.objects.filter(reference=reference).first()
    if (
        pilot is None
        or job.pilot_reference != reference
        or not service.pilot_may_report(request.user, pilot)
    ):
        raise PermissionDenied("a pilot reports only on the jobs it was given")
    return job


class JobReportsMixin:
    @extend_schema(
        request=JobReportSerializer,
        responses={200: OpenApiResponse(), 403: OpenApiResponse(), 409: OpenApiResponse()},
    )
    @action(detail=True, methods=["post"], url_path="status")
    def report_status(self, request, pk=None):
        """The job's pilot reports it starting, running, finished or failed."""
        body = JobReportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reference = body.validated_data["pilot_reference"]
        job = _pilot_job(request, pk, reference)
        try:
            job = service.report_job(
                job.pk,
                body.validated_data["status"],
                body.validated_data["reason"],
                pilot_reference=None if request.user.is_staff else reference,
            )
        except service.PilotError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response({"id": job.pk, "status": job.status})

    @extend_schema(request=HeartbeatSerializer, responses={204: OpenApiResponse()})
    @action(detail=True, methods=["post"])
    def heartbeat(self, request, pk=None):
        body = HeartbeatSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reference = body.validated_data["pilot_reference"]
        job = _pilot_job(request, pk, reference)
        service.heartbeat(job.pk, None if request.user.is_staff else reference)
        return Response(status=status.HTTP_204_NO_CONTENT)
