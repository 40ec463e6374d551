from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from config.permissions import StaffWriteOrReadOnly
from shares.api.serializers import GridGroupSerializer, MeSerializer
from shares.models import GridGroup, User


class GridGroupViewSet(viewsets.ModelViewSet):
    queryset = GridGroup.objects.all()
    serializer_class = GridGroupSerializer
    permission_classes = [StaffWriteOrReadOnly]


class UserViewSet(viewsets.GenericViewSet):
    queryset = User.objects.none()
    serializer_class = MeSerializer

    @extend_schema(responses=MeSerializer)
    @action(detail=False, methods=["get"])
    def me(self, request):
        """The authenticated identity: user name, DN and groups."""
        return Response(MeSerializer(request.user).data)
