"""A job's pilot fetches its input files and uploads its outputs (docs/user-guide.md, What a
job runs):
only the pilot that claimed the job, only while it holds it."""

from __future__ import annotations

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import UnsupportedMediaType
from rest_framework.response import Response

from api.core.authentication import CachedTokenAuthentication
from api.core.codec import JsonOnlyNegotiation, OrjsonRenderer
from api.pilots.access import credential_job, pilot_job
from api.sandboxes.parsers import SandboxMultiPartParser, with_suffix
from matcher.lifecycle import CANCELLED, CLAIMED_STATES, RUNNING_STATES
from matcher.models import Job
from sandboxes import services as sandboxes
from sandboxes.uploads import drain

OUTPUT_PARTS = ("stdout", "stderr", "output")


def too_big(message: str) -> Response:
    """413 with the limit in bytes: the pilot cuts its outputs to it."""
    return Response(
        {"output": [message], "limit": sandboxes.output_budget()},
        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    )


def _conflict(job_id: int, where: str) -> Response:
    now = Job.objects.filter(pk=job_id).values_list("status", flat=True).first()
    return Response({"detail": f"job {job_id} is {now}: {where}"}, status=status.HTTP_409_CONFLICT)


uploaded = inline_serializer(
    "OutputUploaded",
    fields={
        "files": inline_serializer(
            "OutputFile",
            fields={"name": serializers.CharField(), "size": serializers.IntegerField()},
            many=True,
        )
    },
)
output_form = inline_serializer(
    "OutputUpload",
    fields={
        "pilot_reference": serializers.CharField(
            required=False, help_text="required here or in the query string"
        ),
        "stdout": serializers.FileField(required=False),
        "stderr": serializers.FileField(required=False),
        "output": serializers.ListField(
            child=serializers.FileField(),
            required=False,
            help_text="each file's name is its relative name inside the working directory",
        ),
    },
)


class PilotSandboxMixin:
    """The job viewset's actions for the job's pilot (api/matcher/views.py JobViewSet): it
    fetches the job's input files (/jobs/{id}/input/{name}/) and uploads its outputs
    (/jobs/{id}/output/)."""

    @extend_schema(
        summary="Download an input file (the job's pilot)",
        parameters=[
            OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH),
            OpenApiParameter("pilot_reference", OpenApiTypes.STR, required=True),
        ],
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            403: OpenApiResponse(description="not the pilot that claimed the job"),
            404: OpenApiResponse(description="no such input file"),
            409: OpenApiResponse(description="the job is not sent, starting or running"),
        },
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=r"input/(?P<name>[^/]+)",
        renderer_classes=[OrjsonRenderer],
        content_negotiation_class=JsonOnlyNegotiation,
    )
    def input(self, request, pk=None, name=None, format=None):
        """The job's pilot downloads one of its input sandbox files."""
        name = with_suffix(name, format)
        job, _pilot = pilot_job(request, pk, request.query_params.get("pilot_reference", ""))
        state = Job.objects.filter(pk=job.pk).values_list("status", flat=True).first()
        if state not in RUNNING_STATES:
            return _conflict(job.pk, "its input files go to its pilot while it starts")
        entry = sandboxes.input_file(job.pk, name or "")
        if entry is None:
            return Response({"detail": "No such input file."}, status=404)
        handle = sandboxes.storage().open(entry.file.name, "rb")
        response = FileResponse(handle, content_type="application/octet-stream")
        response["Content-Length"] = str(entry.size)
        response["X-Content-Type-Options"] = "nosniff"
        return response

    @extend_schema(
        summary="Upload a job's outputs (its pilot)",
        request={"multipart/form-data": output_form},
        parameters=[
            OpenApiParameter(
                "pilot_reference",
                OpenApiTypes.STR,
                description="the uploading pilot, checked before the body is read (the "
                "form's, if given too, must be the same)",
            )
        ],
        responses={
            200: uploaded,
            400: OpenApiResponse(description="a bad part, named"),
            403: OpenApiResponse(description="not the pilot that claimed the job"),
            409: OpenApiResponse(description="no pilot holds the job"),
            413: OpenApiResponse(
                description="output over MaxOutputSandboxBytes; `limit` says it in bytes (the "
                "pilot cuts its outputs to it and uploads again)"
            ),
        },
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="output",
        parser_classes=[SandboxMultiPartParser],
        # A token only: a session's CSRF check would read (and spool) the body before anyone
        # is asked. Pilots hold tokens.
        authentication_classes=[CachedTokenAuthentication],
    )
    def output(self, request, pk=None):
        """The job's pilot uploads its stdout, stderr and output sandbox files, shown once its
        final status report arrives (a pilot dying meanwhile leaves nothing shown)."""
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > sandboxes.output_budget() + sandboxes.FORM_SLACK:
            drain(request, length)  # the pilot reads the 413 and its limit, not a broken pipe
            return too_big(sandboxes.output_over_limit(length))
        if not (request.content_type or "").startswith("multipart/form-data"):
            raise UnsupportedMediaType(request.content_type)
        # Who asks, before the body is parsed: its files would be spooled to disk first. The
        # reference in the query string is checked now; one only in the form, once read.
        queried = request.query_params.get("pilot_reference")
        if queried:
            job, _pilot = pilot_job(request, pk, queried)
        else:
            job = credential_job(request, pk)
        state, killed = (
            Job.objects.filter(pk=job.pk).values_list("status", "kill_requested").first()
        ) or ("", False)
        # A job killed while its pilot held it: the pilot brings back what the payload wrote
        # until then, with its acknowledgement (the files are shown once that arrives).
        if state not in CLAIMED_STATES and not (state == CANCELLED and killed):
            return _conflict(job.pk, "no pilot holds it, no upload")
        data, files = request.POST, request.FILES  # text parts, file parts
        unknown = sorted((set(data) | set(files)) - {"pilot_reference", *OUTPUT_PARTS})
        if unknown:
            return Response({k: ["Unknown field."] for k in unknown}, status=400)
        text = [p for p in OUTPUT_PARTS if p in data]
        if text:
            return Response({p: ["must be a file part"] for p in text}, status=400)
        reference = data.get("pilot_reference") or queried
        if not isinstance(reference, str) or not reference:
            return Response({"pilot_reference": ["This field is required."]}, status=400)
        if queried and reference != queried:
            return Response(
                {"pilot_reference": ["the form's differs from the query string's"]}, status=400
            )
        if not queried:
            pilot_job(request, pk, reference)
        parts = [
            sandboxes.Part(kind, upload) for kind in OUTPUT_PARTS for upload in files.getlist(kind)
        ]
        try:
            rows = sandboxes.stage_outputs(job.pk, parts)
        except sandboxes.SandboxError as exc:
            if exc.status == status.HTTP_413_REQUEST_ENTITY_TOO_LARGE:
                return too_big(exc.message)
            return Response({exc.field: [exc.message]}, status=exc.status)
        return Response({"files": [{"name": r.name, "size": r.size} for r in rows]})
