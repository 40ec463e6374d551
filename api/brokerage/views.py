import json

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser
from rest_framework.response import Response

from api.brokerage import serializers as s
from api.core.codec import OrjsonParser
from api.core.export import ExportMixin
from api.core.permissions import StaffOnly, StaffWriteOrReadOnly
from api.sandboxes.parsers import SandboxMultiPartParser
from api.shares.mixins import VisibleToUserMixin
from brokerage.models import (
    BrokerageRun,
    Dataset,
    GlobalShare,
    NetworkLink,
    Nucleus,
    PandaQueue,
    Storage,
    Task,
    UserQuota,
)
from brokerage.services.actions import TaskActionError, kill_task, retry_task
from brokerage.services.submission import TaskRefused, submit_task, task_outputs
from sandboxes import services as sandboxes
from web.brokerage.filters import BrokerageRunFilterSet, PandaQueueFilterSet, TaskFilterSet

SUBMISSION_PARTS = {"task", "input_sandbox"}

task_form = inline_serializer(
    "TaskSubmitMultipart",
    fields={
        "task": serializers.CharField(help_text="the task as a JSON object"),
        "input_sandbox": serializers.ListField(
            child=serializers.FileField(), required=False, help_text="each job's input files"
        ),
    },
)


def _bad(field: str, message: str, answer: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({field: [message]}, status=answer)


class TaskViewSet(
    VisibleToUserMixin,
    ExportMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Production and analysis tasks: submit (with their input datasets, and a payload with
    its input files), list, read, its jobs' outputs, kill, retry; staff change a task's
    class."""

    http_method_names = ["get", "post", "patch", "head", "options"]
    queryset = Task.objects.select_related("owner", "owner_group", "nucleus").prefetch_related(
        "inputs__dataset"
    )
    filterset_class = TaskFilterSet
    export_name = "tasks"
    # JSON, and multipart keeping the input files' names as sent.
    parser_classes = [OrjsonParser, FormParser, SandboxMultiPartParser]

    def get_permissions(self):
        if self.action == "partial_update":
            return [StaffOnly()]
        return super().get_permissions()

    def get_serializer_class(self):
        if self.action == "partial_update":
            return s.TaskClassSerializer
        return s.TaskSubmitSerializer if self.action == "create" else s.TaskSerializer

    @extend_schema(
        summary="Submit a task",
        request={"application/json": s.TaskSubmitSerializer, "multipart/form-data": task_form},
        responses={
            201: s.TaskSerializer,
            400: OpenApiResponse(description="bad task: the body names each bad field"),
            413: OpenApiResponse(description="input_sandbox over MaxInputSandboxBytes"),
        },
        description="Submit a task (a JSON object); or a task with input files each of its jobs "
        "is given (multipart/form-data: a `task` JSON part and `input_sandbox` file parts).",
    )
    def create(self, request, *args, **kwargs):
        files = []
        data = request.data
        if request.content_type.startswith("multipart/form-data"):
            unknown = sorted((set(request.POST) | set(request.FILES)) - SUBMISSION_PARTS)
            if unknown:
                return Response({k: ["Unknown field."] for k in unknown}, status=400)
            if "input_sandbox" in request.POST:
                return _bad("input_sandbox", "must be file parts")
            if "task" not in request.POST:
                return _bad("task", "the task as a JSON object is required")
            try:
                data = json.loads(request.POST["task"])
            except ValueError as exc:
                return _bad("task", f"not valid JSON ({exc})")
            if not isinstance(data, dict):
                return _bad("task", "must be one task (a JSON object)")
            files = request.FILES.getlist("input_sandbox")
            try:
                sandboxes.check_inputs(files)
            except sandboxes.SandboxError as exc:
                return _bad(exc.field, exc.message, exc.status)
        body = s.TaskSubmitSerializer(data=data, context={"request": request})
        body.is_valid(raise_exception=True)
        fields = dict(body.validated_data)
        inputs = [(i["dataset"], i["master"]) for i in fields.pop("inputs", [])]
        try:
            task = submit_task(request.user, fields, inputs, files)
        except TaskRefused as exc:
            return _bad(exc.field, exc.message)
        return Response(s.TaskSerializer(task).data, status=status.HTTP_201_CREATED)

    def _act(self, request, fn):
        task = self.get_object()  # visible to the user: theirs, their JobSharing group's, staff
        try:
            fn(task.pk, request.user)
        except TaskActionError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(s.TaskSerializer(self.get_queryset().get(pk=task.pk)).data)

    @extend_schema(
        summary="Kill a task",
        request=None,
        responses={200: s.TaskSerializer, 409: OpenApiResponse(description="has ended")},
    )
    @action(detail=True, methods=["post"])
    def kill(self, request, pk=None):
        """Cancel the task's jobs not ended yet; the task ends (finished or failed)."""
        return self._act(request, kill_task)

    @extend_schema(
        summary="Retry an ended task's failed jobs",
        request=None,
        responses={
            200: s.TaskSerializer,
            409: OpenApiResponse(description="not ended finished or failed"),
        },
    )
    @action(detail=True, methods=["post"])
    def retry(self, request, pk=None):
        """Define the failed, cancelled and closed jobs of an ended task again (one more
        attempt each, the same payload) and send the task back to brokerage."""
        return self._act(request, retry_task)

    @extend_schema(
        summary="List a task's output files", responses=s.TaskOutputSerializer(many=True)
    )
    @action(detail=True, methods=["get"], pagination_class=None)
    def outputs(self, request, pk=None):
        """The output files (stdout, stderr, the output sandbox's) of the task's current jobs,
        each job's once its final report arrived; `url` downloads one."""
        task = self.get_object()
        return Response(s.TaskOutputSerializer(task_outputs(task.pk), many=True).data)

    @extend_schema(
        summary="A task's brokerage decisions", responses=s.BrokerageRunSerializer(many=True)
    )
    @action(detail=True, methods=["get"], pagination_class=None)
    def brokerage(self, request, pk=None):
        """The task's brokerage runs, newest first: every candidate and why."""
        task = self.get_object()
        runs = BrokerageRun.objects.filter(task=task)[:20]
        return Response(s.BrokerageRunSerializer(runs, many=True).data)


class BrokerageRunViewSet(ExportMixin, viewsets.ReadOnlyModelViewSet):
    """Brokerage decisions (traces) of the tasks you can see."""

    serializer_class = s.BrokerageRunSerializer
    filterset_class = BrokerageRunFilterSet
    export_name = "decisions"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return BrokerageRun.objects.none()
        return BrokerageRun.objects.filter(task__in=Task.objects.visible_to(self.request.user))


class NucleusViewSet(viewsets.ModelViewSet):
    """PanDA nuclei: where a task's outputs are aggregated. Everyone reads them; staff change
    them."""

    queryset = Nucleus.objects.select_related("site")
    serializer_class = s.NucleusSerializer
    permission_classes = [StaffWriteOrReadOnly]


class StorageViewSet(viewsets.ModelViewSet):
    """Storage endpoints, each at a site (and of a nucleus, if any). Everyone reads them; staff
    change them."""

    queryset = Storage.objects.select_related("site", "nucleus")
    serializer_class = s.StorageSerializer
    permission_classes = [StaffWriteOrReadOnly]


class PandaQueueViewSet(viewsets.ModelViewSet):
    """PanDA queues: where brokerage sends a task's jobs, each at a site. Everyone reads them;
    staff change them."""

    queryset = PandaQueue.objects.select_related(
        "site", "nucleus", "input_storage", "output_storage"
    )
    serializer_class = s.PandaQueueSerializer
    permission_classes = [StaffWriteOrReadOnly]
    filterset_class = PandaQueueFilterSet


class NetworkLinkViewSet(viewsets.ModelViewSet):
    """Network metrics from a satellite site to a nucleus, as brokerage weighs them. Everyone
    reads them; staff change them."""

    queryset = NetworkLink.objects.select_related("source", "nucleus")
    serializer_class = s.NetworkLinkSerializer
    permission_classes = [StaffWriteOrReadOnly]


class DatasetViewSet(viewsets.ReadOnlyModelViewSet):
    """Datasets, with their replicas' storages: what tasks read."""

    queryset = Dataset.objects.prefetch_related("replicas__storage")
    serializer_class = s.DatasetSerializer


class GlobalShareViewSet(viewsets.ModelViewSet):
    """PanDA's global shares, each with its target fraction of the running cores. Everyone reads
    them; staff change them."""

    queryset = GlobalShare.objects.all()
    serializer_class = s.GlobalShareSerializer
    permission_classes = [StaffWriteOrReadOnly]


class UserQuotaViewSet(viewsets.ModelViewSet):
    """Users' global disk quotas (the analysis throttle): staff only."""

    queryset = UserQuota.objects.select_related("user")
    serializer_class = s.UserQuotaSerializer
    permission_classes = [StaffOnly]
