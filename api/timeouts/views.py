"""The timeout actions in the API: listed, read and exported as on their page."""

from rest_framework import serializers, viewsets

from api.core.export import ExportMixin
from api.shares.mixins import VisibleToUserMixin
from timeouts.models import TimeoutAction
from web.timeouts.filters import TimeoutActionFilterSet


class TimeoutActionSerializer(serializers.ModelSerializer):
    class Meta:
        model = TimeoutAction
        fields = ["id", "at", "rule", "job", "from_status", "to_status", "queue", "reason"]


class TimeoutActionViewSet(VisibleToUserMixin, ExportMixin, viewsets.ReadOnlyModelViewSet):
    """What the timeout rules did, on the jobs you may see."""

    queryset = TimeoutAction.objects.all()
    serializer_class = TimeoutActionSerializer
    filterset_class = TimeoutActionFilterSet
    export_name = "timeout-actions"
    lookup_value_regex = r"\d+"
