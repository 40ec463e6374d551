from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser
from rest_framework.response import Response

from api.core.codec import OrjsonParser
from api.core.export import ExportMixin
from api.core.permissions import StaffOnly, StaffWriteOrReadOnly
from api.matcher import resources as r
from api.matcher import serializers as s
from api.pilots.sandbox import PilotSandboxMixin
from api.pilots.views import JobReportsMixin
from api.sandboxes.parsers import SandboxMultiPartParser
from api.sandboxes.views import JDLText, JDLTextParser, JobSandboxMixin, submission_form
from api.shares.mixins import VisibleToUserMixin
from matcher import dispatcher, services
from matcher.models import ComputingElement, Job, Site, TaskQueue
from shares.ownership import may_act_on
from web.matcher import selectors
from web.matcher.filters import JobFilterSet, TaskQueueFilterSet
from web.matcher.job_ids import JobIds

# One job (an object) or several (a list): the answer has the same form.
ONE_OR_MORE_JOBS = PolymorphicProxySerializer(
    component_name="JobSubmission",
    serializers=[s.JobSubmitSerializer, s.JobSubmitSerializer(many=True)],
    resource_type_field_name=None,
    many=False,
)
ONE_OR_MORE_CREATED = PolymorphicProxySerializer(
    component_name="JobsCreated",
    serializers=[s.JobCreatedSerializer, s.JobCreatedSerializer(many=True)],
    resource_type_field_name=None,
    many=False,
)


class JobViewSet(
    # The job's pilot: status/, heartbeat/.
    JobReportsMixin,
    # The job's pilot: input/{name}/, output/.
    PilotSandboxMixin,
    # Those who may see the job: sandbox/, sandbox/{name}, log/; create_with_files.
    JobSandboxMixin,
    VisibleToUserMixin,
    # export/.
    ExportMixin,
    mixins.CreateModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Jobs: submit (one or a list, all or nothing; one with input files or as a JDL text),
    list, export, read, kill, reschedule, analyse; the job's pilot reports on it and moves its
    files; whoever may see it reads its output files and logs."""

    queryset = Job.objects.select_related("owner", "owner_group", "task_job")
    filterset_class = JobFilterSet
    export_name = "jobs"
    lookup_value_regex = r"\d+"
    # JSON, form, multipart keeping the files' names as sent, and a JDL as text/plain.
    parser_classes = [OrjsonParser, FormParser, SandboxMultiPartParser, JDLTextParser]

    def get_queryset(self):
        qs = super().get_queryset()
        if self.action in ("list", "retrieve", "kill", "reschedule"):
            qs = s.with_start_times(qs)
        if self.action == "retrieve":
            qs = qs.prefetch_related("history")
        return qs

    def id_plan(self):
        """How the list finds a page's ids at a cost bounded by the page (web.matcher.job_ids;
        read by web.core.pagination.DefaultCursorPagination)."""
        if self.action != "list" or getattr(self, "swagger_fake_view", False):
            return None
        return JobIds(self.request.user, self.request.query_params)

    def get_serializer_class(self):
        if self.action == "create":
            return s.JobSubmitSerializer
        if self.action == "retrieve":
            return s.JobDetailSerializer
        return s.JobSerializer

    @extend_schema(
        summary="Submit jobs",
        request={
            "application/json": ONE_OR_MORE_JOBS,
            "multipart/form-data": submission_form,
            "text/plain": OpenApiTypes.STR,
        },
        responses={
            201: ONE_OR_MORE_CREATED,
            400: OpenApiResponse(
                description="bad job: the body names each bad field (for a list, by position: "
                '`{"1": {"cpu_time": [...]}}`)'
            ),
            413: OpenApiResponse(description="input_sandbox over MaxInputSandboxBytes"),
        },
        description="Submit one job (an object) or several (a list, stored all or nothing); or "
        "one job with input sandbox files (multipart/form-data: a `job` JSON part or a `jdl` "
        "part, and `input_sandbox` file parts); or one job as a DIRAC JDL text (text/plain). "
        "A job that no active CE can take is stored all the same, with `warnings` naming why.",
    )
    def create(self, request, *args, **kwargs):
        if isinstance(request.data, JDLText) or request.content_type.startswith(
            "multipart/form-data"
        ):
            return self.create_with_files(request)
        many = isinstance(request.data, list)
        context = {"submission": s.SubmissionContext(request.user), "request": request}
        kwargs = {"many": True, "allow_empty": False} if many else {}
        serializer = s.JobSubmitSerializer(data=request.data, context=context, **kwargs)
        serializer.is_valid(raise_exception=True)
        specs = serializer.validated_data if many else [serializer.validated_data]
        jobs = services.submit_jobs(request.user, specs)
        warnings = selectors.job_warnings(jobs)
        for job in jobs:
            job.warnings = warnings[job.pk]
        out = s.JobCreatedSerializer(jobs, many=True).data
        return Response(out if many else out[0], status=status.HTTP_201_CREATED)

    def _act(self, request, pk, fn):
        job = get_object_or_404(self.get_queryset(), pk=pk)
        if not may_act_on(request.user, job):
            raise PermissionDenied("Only the owner, the owner's JobSharing group or staff may.")
        try:
            fn(job.pk, request.user)
        except services.JobActionError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        job = self.get_queryset().prefetch_related("history").get(pk=job.pk)
        return Response(s.JobDetailSerializer(job).data)

    @extend_schema(
        summary="Kill or reschedule many jobs",
        request=s.BulkActionSerializer,
        responses=s.BulkOutcomeSerializer,
    )
    @action(detail=False, methods=["post"])
    def bulk(self, request):
        """Kill or reschedule many jobs in one transaction, each checked as one: those refused
        (not yours, or their state does not allow it) are named with the reason, the rest
        done."""
        body = s.BulkActionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        visible = Job.objects.visible_to(request.user)
        out = services.act_on_jobs(data["action"], data["ids"], request.user, visible)
        refused = [{"id": pk, "reason": why} for pk, why in sorted(out.refused.items())]
        return Response(s.BulkOutcomeSerializer({"done": out.done, "refused": refused}).data)

    @extend_schema(
        summary="Kill a job",
        description="Cancel a live job: it leaves its TaskQueue; a pilot running it is told to "
        "stop at its next heartbeat. Its owner, the owner's JobSharing group or staff may (else "
        "403); an ended job answers 409 naming why.",
        request=None,
        responses={200: s.JobDetailSerializer, 409: OpenApiResponse()},
    )
    @action(detail=True, methods=["post"])
    def kill(self, request, pk=None):
        return self._act(request, pk, services.kill_job)

    @extend_schema(summary="Why a job is not running", responses=r.JobAnalysisSerializer)
    @action(detail=True, methods=["get"])
    def analysis(self, request, pk=None):
        """Why is this job not running? For a waiting job: every active CE, whether its pilots
        could take the job's TaskQueue, and if not the first matching rule that fails."""
        job = get_object_or_404(self.get_queryset(), pk=pk)
        return Response(r.JobAnalysisSerializer(dispatcher.analyse_job(job)).data)

    @extend_schema(
        summary="Reschedule a job",
        description="Send the job back to wait in its TaskQueue, with another attempt; a "
        "pilot's claim on it is revoked. Its owner, the owner's JobSharing group or staff may "
        "(else 403); a job whose state does not allow it, or rescheduled MaxRescheduling times "
        "already, answers 409 naming why.",
        request=None,
        responses={200: s.JobDetailSerializer, 409: OpenApiResponse()},
    )
    @action(detail=True, methods=["post"])
    def reschedule(self, request, pk=None):
        return self._act(request, pk, services.reschedule_job)


class TaskQueueViewSet(VisibleToUserMixin, ExportMixin, viewsets.ReadOnlyModelViewSet):
    """TaskQueues: waiting jobs with the same requirements, matched to pilots as one. You see
    those of the jobs you may see."""

    queryset = TaskQueue.objects.all()
    filterset_class = TaskQueueFilterSet
    export_name = "taskqueues"
    lookup_value_regex = r"\d+"

    def get_queryset(self):
        return selectors.taskqueues_with_counts(super().get_queryset())

    def get_serializer_class(self):
        return s.TaskQueueDetailSerializer if self.action == "retrieve" else s.TaskQueueSerializer

    @extend_schema(
        summary="The TaskQueues a pilot would match",
        request=r.ResourceDescriptionSerializer,
        responses={200: r.MatchingTaskQueueSerializer(many=True), 400: OpenApiResponse()},
    )
    @action(detail=False, methods=["post"], permission_classes=[StaffOnly])
    def matching(self, request):
        """What would this pilot run? The TaskQueues a resource description matches, in draw
        order, with their priorities, waiting jobs and probability of being drawn (staff)."""
        body = r.ResourceDescriptionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        rows = dispatcher.taskqueue_draw_table(body.resource(request.user))
        return Response([r.MatchingTaskQueueSerializer.describe(row) for row in rows])


class SiteViewSet(viewsets.ModelViewSet):
    """Grid sites. Everyone reads them; staff change them."""

    queryset = Site.objects.all()
    serializer_class = s.SiteSerializer
    permission_classes = [StaffWriteOrReadOnly]


class ComputingElementViewSet(viewsets.ModelViewSet):
    """Computing elements (CEs), each at a site, with what it offers its pilots. Everyone reads
    them; staff change them."""

    queryset = ComputingElement.objects.select_related("site")
    serializer_class = s.ComputingElementSerializer
    permission_classes = [StaffWriteOrReadOnly]
    filterset_fields = ["site__name", "status"]
