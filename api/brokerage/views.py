from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from api.brokerage import serializers as s
from api.core.export import ExportMixin
from api.core.permissions import StaffOnly, StaffWriteOrReadOnly
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
from brokerage.services.submission import submit_task
from web.brokerage.filters import BrokerageRunFilterSet, PandaQueueFilterSet, TaskFilterSet


class TaskViewSet(
    VisibleToUserMixin,
    ExportMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Production and analysis tasks: submit (with their input datasets), list, read; staff
    change a task's class."""

    http_method_names = ["get", "post", "patch", "head", "options"]
    queryset = Task.objects.select_related("owner", "owner_group", "nucleus").prefetch_related(
        "inputs__dataset"
    )
    filterset_class = TaskFilterSet
    export_name = "tasks"

    def get_permissions(self):
        if self.action == "partial_update":
            return [StaffOnly()]
        return super().get_permissions()

    def get_serializer_class(self):
        if self.action == "partial_update":
            return s.TaskClassSerializer
        return s.TaskSubmitSerializer if self.action == "create" else s.TaskSerializer

    @extend_schema(
        request=s.TaskSubmitSerializer,
        responses={201: s.TaskSerializer, 400: OpenApiResponse(description="bad task")},
    )
    def create(self, request, *args, **kwargs):
        body = s.TaskSubmitSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        fields = dict(body.validated_data)
        inputs = [(i["dataset"], i["master"]) for i in fields.pop("inputs", [])]
        task = submit_task(request.user, fields, inputs)
        return Response(s.TaskSerializer(task).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=s.BrokerageRunSerializer(many=True))
    @action(detail=True, methods=["get"])
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
    queryset = Nucleus.objects.select_related("site")
    serializer_class = s.NucleusSerializer
    permission_classes = [StaffWriteOrReadOnly]


class StorageViewSet(viewsets.ModelViewSet):
    queryset = Storage.objects.select_related("site", "nucleus")
    serializer_class = s.StorageSerializer
    permission_classes = [StaffWriteOrReadOnly]


class PandaQueueViewSet(viewsets.ModelViewSet):
    queryset = PandaQueue.objects.select_related(
        "site", "nucleus", "input_storage", "output_storage"
    )
    serializer_class = s.PandaQueueSerializer
    permission_classes = [StaffWriteOrReadOnly]
    filterset_class = PandaQueueFilterSet


class NetworkLinkViewSet(viewsets.ModelViewSet):
    queryset = NetworkLink.objects.select_related("source", "nucleus")
    serializer_class = s.NetworkLinkSerializer
    permission_classes = [StaffWriteOrReadOnly]


class DatasetViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Dataset.objects.prefetch_related("replicas__storage")
    serializer_class = s.DatasetSerializer


class GlobalShareViewSet(viewsets.ModelViewSet):
    queryset = GlobalShare.objects.all()
    serializer_class = s.GlobalShareSerializer
    permission_classes = [StaffWriteOrReadOnly]


class UserQuotaViewSet(viewsets.ModelViewSet):
    """Users' global disk quotas (the analysis throttle): staff only."""

    queryset = UserQuota.objects.select_related("user")
    serializer_class = s.UserQuotaSerializer
    permission_classes = [StaffOnly]
