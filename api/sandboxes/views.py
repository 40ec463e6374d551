"""The job API's sandbox side (a base of api/matcher/views.py JobViewSet): submissions with
input files (multipart) or as a JDL text, and for those who may see the job its output files,
their download and its stdout or stderr as text."""

from __future__ import annotations

import json
import mimetypes
from urllib.parse import quote

from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from api.core.codec import JsonOnlyNegotiation, OrjsonRenderer
from api.matcher import serializers as s
from api.sandboxes.parsers import with_suffix
from core import gdpconfig
from matcher.jdl import JDLError, parse_jdl
from sandboxes import services
from sandboxes.models import SandboxKind
from sandboxes.uploads import sent_name
from web.matcher import selectors

SUBMISSION_PARTS = {"job", "jdl", "input_sandbox"}


class JDLText(str):
    """A text/plain request body: a DIRAC JDL."""


class JDLTextParser(BaseParser):
    media_type = "text/plain"

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = "utf-8"
        for param in (media_type or "").split(";")[1:]:
            key, _, value = param.strip().partition("=")
            if key.lower() == "charset" and value:
                encoding = value.strip('"')
        try:
            return JDLText(stream.read().decode(encoding))
        except (LookupError, UnicodeDecodeError) as exc:
            raise ParseError(f"the JDL is not {encoding} text ({exc})") from None


def _bad(field: str, message: str, answer: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({field: [message]}, status=answer)


class SandboxOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    size = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["stdout", "stderr", "output"])
    url = serializers.CharField()


NAME = OpenApiParameter(
    "name", OpenApiTypes.STR, OpenApiParameter.PATH, description="the file's name in the listing"
)
FILE_RESPONSES = {
    (200, "application/octet-stream"): OpenApiTypes.BINARY,
    (200, "text/plain"): OpenApiTypes.STR,
    404: OpenApiResponse(description="no such job visible to you, or no such file"),
}

submission_form = inline_serializer(
    "JobSubmitMultipart",
    fields={
        "job": serializers.CharField(required=False, help_text="the job as a JSON object"),
        "jdl": serializers.CharField(required=False, help_text="or the job as a DIRAC JDL"),
        "input_sandbox": serializers.ListField(
            child=serializers.FileField(), required=False, help_text="the input files"
        ),
    },
)


class JobSandboxMixin:
    """The job viewset's sandbox actions (api/matcher/views.py JobViewSet): its submission with
    files or as a JDL text (create_with_files), /jobs/{id}/sandbox/,
    /jobs/{id}/sandbox/{name}, /jobs/{id}/log/."""

    def create_with_files(self, request) -> Response:
        """A submission as a JDL text (text/plain), or one job with input files
        (multipart/form-data: a `job` JSON part or a `jdl` part, `input_sandbox` file parts)."""
        if isinstance(request.data, JDLText):
            return self._submit_jdl(request, str(request.data), [])
        data = request.POST  # the text parts (request.data holds the files too)
        unknown = sorted((set(data) | set(request.FILES)) - SUBMISSION_PARTS)
        if unknown:
            return Response({k: ["Unknown field."] for k in unknown}, status=400)
        files = request.FILES.getlist("input_sandbox")
        if "input_sandbox" in data:
            return _bad("input_sandbox", "must be file parts")
        if ("job" in data) == ("jdl" in data):
            return _bad("job", "one part `job` (JSON) or `jdl` (a JDL text), not both")
        if "jdl" in data:
            return self._submit_jdl(request, data["jdl"], files)
        try:
            job = json.loads(data["job"])
        except ValueError as exc:
            return _bad("job", f"not valid JSON ({exc})")
        if not isinstance(job, dict):
            return _bad("job", "must be one job (a JSON object) to go with input sandbox files")
        return self._submit(request, job, files)

    def _submit_jdl(self, request, text: str, files):
        size, limit = len(text.encode()), gdpconfig.get("MaxJDLBytes")
        if size > limit:
            return _bad("jdl", f"The JDL is {size} bytes; at most {limit} (MaxJDLBytes).")
        try:
            payload, _names = parse_jdl(text, gdpconfig.get("MaxJDLAttributes"))
        except JDLError as exc:
            return _bad("jdl", f"{exc.field}: {exc.message}")
        wanted = payload.pop("input_sandbox", [])
        if not isinstance(wanted, list) or not all(isinstance(n, str) for n in wanted):
            return _bad("input_sandbox", "InputSandbox must be a list of file names")
        missing = sorted(set(wanted) - {sent_name(f) for f in files})
        if missing:
            return _bad("input_sandbox", f"InputSandbox names files not uploaded: {missing}")
        return self._submit(request, payload, files, jdl=text)

    def _submit(self, request, payload: dict, files, jdl: str = ""):
        try:
            services.check_inputs(files)
        except services.SandboxError as exc:
            return _bad(exc.field, exc.message, exc.status)
        context = {"submission": s.SubmissionContext(request.user), "request": request}
        serializer = s.JobSubmitSerializer(data=payload, context=context)
        serializer.is_valid(raise_exception=True)
        spec = dict(serializer.validated_data, jdl=jdl)
        jobs = services.submit_with_inputs(request.user, spec, files)
        warnings = selectors.job_warnings(jobs)
        jobs[0].warnings = warnings[jobs[0].pk]
        out = s.JobCreatedSerializer(jobs[0]).data
        return Response(out, status=status.HTTP_201_CREATED)

    # --- the user's side --------------------------------------------------------------------

    @extend_schema(
        summary="List a job's output files",
        responses={200: SandboxOutputSerializer(many=True), 404: OpenApiResponse()},
        description="The job's output files (stdout, stderr, the output sandbox's files) once "
        "its pilot's final report arrived.",
    )
    @action(detail=True, methods=["get"], url_path="sandbox", pagination_class=None)
    def sandbox(self, request, pk=None):
        job = get_object_or_404(self.get_queryset(), pk=pk)
        return Response(
            [
                {
                    "name": f.name,
                    "size": f.size,
                    "kind": f.kind,
                    "url": f"/api/v1/jobs/{job.pk}/sandbox/{quote(f.name)}",
                }
                for f in services.outputs(job.pk)
            ]
        )

    @extend_schema(summary="Download an output file", parameters=[NAME], responses=FILE_RESPONSES)
    @action(
        detail=True,
        methods=["get"],
        url_path=r"sandbox/(?P<name>.+)",
        renderer_classes=[OrjsonRenderer],
        content_negotiation_class=JsonOnlyNegotiation,
    )
    def sandbox_file(self, request, pk=None, name=None, format=None):
        """One output file, as an attachment (never served as a page)."""
        job = get_object_or_404(self.get_queryset(), pk=pk)
        # The router reads a name's extension as a format suffix: the name is both.
        entry = services.output_file(job.pk, with_suffix(name, format))
        if entry is None:
            return Response({"detail": "No such output file."}, status=404)
        return file_response(entry)

    @extend_schema(
        summary="Read a job's stdout or stderr",
        parameters=[
            OpenApiParameter("stream", str, enum=["stdout", "stderr"], default="stdout"),
            OpenApiParameter("tail", int, description="the last N lines only"),
        ],
        responses={
            (200, "text/plain"): OpenApiTypes.STR,
            400: OpenApiResponse(description="bad stream or tail"),
            404: OpenApiResponse(),
        },
        description="The job's stdout or stderr as text; while the job runs, stdout is its "
        "pilot's last heartbeat's output tail.",
    )
    @action(
        detail=True,
        methods=["get"],
        renderer_classes=[OrjsonRenderer],
        content_negotiation_class=JsonOnlyNegotiation,
    )
    def log(self, request, pk=None):
        job = get_object_or_404(self.get_queryset(), pk=pk)
        stream = request.query_params.get("stream", "stdout")
        if stream not in ("stdout", "stderr"):
            return _bad("stream", "stdout or stderr")
        tail = request.query_params.get("tail")
        if tail not in (None, "") and (not tail.isdigit() or len(tail) > 9):
            return _bad("tail", "a number of lines")
        lines = int(tail) if tail else None
        entry = services.stream_file(job.pk, SandboxKind(stream))
        if entry is not None:
            # Streamed: a log may be tens of MiB, a tail is read back from the file's end.
            text = services.open_text(entry, lines)
            response = StreamingHttpResponse(text, content_type="text/plain; charset=utf-8")
        else:
            text = job.output_tail if stream == "stdout" else ""
            if lines is not None:
                text = "".join(text.splitlines(keepends=True)[-lines:]) if lines else ""
            response = HttpResponse(text, content_type="text/plain; charset=utf-8")
        response["X-Content-Type-Options"] = "nosniff"
        return response


def file_response(entry) -> FileResponse:
    """The stored file as an attachment: text types as text/plain, everything else as
    application/octet-stream (never HTML, never sniffed)."""
    guessed, _ = mimetypes.guess_type(entry.name)
    text = entry.kind in (SandboxKind.STDOUT, SandboxKind.STDERR) or (
        guessed is not None and guessed.startswith("text/") and guessed != "text/html"
    )
    content_type = "text/plain; charset=utf-8" if text else "application/octet-stream"
    handle = services.storage().open(entry.file.name, "rb")
    base = entry.name.rsplit("/", 1)[-1]
    response = FileResponse(handle, as_attachment=True, filename=base, content_type=content_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Length"] = str(entry.size)
    return response
