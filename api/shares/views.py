from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from api.core.permissions import StaffWriteOrReadOnly
from api.shares.serializers import GridGroupSerializer, GroupChangeSerializer, MeSerializer
from matcher.services import groups
from shares import services
from shares.models import GridGroup, GroupChange, User
from web.core.filters import StrictQueryMixin


class GridGroupViewSet(viewsets.ModelViewSet):
    """Groups with JobShare and properties. Staff change them; every change is recorded
    (who, when, old -> new) and the group's TaskQueue priorities are recomputed."""

    queryset = GridGroup.objects.all()
    serializer_class = GridGroupSerializer
    permission_classes = [StaffWriteOrReadOnly]

    def perform_update(self, serializer):
        data = serializer.validated_data
        if data.get("name", serializer.instance.name) != serializer.instance.name:
            raise serializers.ValidationError({"name": ["a group keeps its name"]})
        changes = {k: v for k, v in data.items() if k in services.EDITABLE}
        comment = data.get("comment") or "via the API"
        try:
            serializer.instance = groups.update_group(
                serializer.instance, changes, self.request.user, comment
            )
        except services.ShareError as exc:
            raise serializers.ValidationError({exc.field: [exc.message]}) from None

    @extend_schema(summary="A group's recorded changes", responses=GroupChangeSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)
    def changes(self, request, pk=None):
        """The recorded changes of this group, newest first."""
        group = self.get_object()
        rows = GroupChange.objects.filter(group=group).select_related("changed_by")
        return Response(GroupChangeSerializer(rows, many=True).data)


class UserViewSet(StrictQueryMixin, viewsets.GenericViewSet):
    queryset = User.objects.none()
    serializer_class = MeSerializer

    @extend_schema(summary="Who am I", responses=MeSerializer)
    @action(detail=False, methods=["get"])
    def me(self, request):
        """The authenticated identity: user name, DN and groups."""
        return Response(MeSerializer(request.user).data)
