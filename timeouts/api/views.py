"""The timeout actions in the API: listed, read and exported as on their page."""

from rest_framework import serializers, viewsets

from config.api.export import ExportMixin
from shares.api.mixins import VisibleToUserMixin
from timeouts.filters import TimeoutActionFilterSet
from timeouts.models import TimeoutAction


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
