"""GET /api/v1/shares/: expected and achieved shares with their corrections, per group and
per user, and the corrector configuration in force (shares.overview; the waiting work in it
comes from the apps registered there)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from config import gdpconfig
from config.filters import StrictQueryMixin
from shares import overview


class CorrectionSerializer(serializers.Serializer):
    factor = serializers.FloatField()
    slices = serializers.DictField(child=serializers.FloatField())
    instance = serializers.CharField()
    at = serializers.DateTimeField()


class UserShareSerializer(serializers.Serializer):
    user = serializers.CharField(source="user.username")
    waiting_jobs = serializers.IntegerField()
    expected = serializers.FloatField()
    achieved = serializers.FloatField(allow_null=True)
    running = serializers.FloatField()
    correction = CorrectionSerializer(allow_null=True)


class GroupShareSerializer(serializers.Serializer):
    group = serializers.CharField(source="group.name")
    job_share = serializers.FloatField(source="group.job_share")
    job_sharing = serializers.BooleanField(source="group.job_sharing")
    waiting_jobs = serializers.IntegerField()
    taskqueues = serializers.IntegerField()
    expected = serializers.FloatField(allow_null=True)
    achieved = serializers.FloatField(allow_null=True)
    running = serializers.FloatField()
    correction = CorrectionSerializer(allow_null=True)
    users = UserShareSerializer(many=True)


class SharesSerializer(serializers.Serializer):
    correction_enabled = serializers.BooleanField()
    priority_consolidation = serializers.CharField()
    share_correctors = serializers.ListField(child=serializers.CharField())
    wmshistory = serializers.JSONField()
    groups = GroupShareSerializer(many=True)


class SharesViewSet(StrictQueryMixin, viewsets.ViewSet):
    @extend_schema(responses=SharesSerializer)
    def list(self, request):
        data = overview.overview()
        body = {
            "correction_enabled": gdpconfig.get("EnableSharesCorrection"),
            "priority_consolidation": gdpconfig.get("PRIORITY_CONSOLIDATION"),
            "share_correctors": gdpconfig.get("ShareCorrectorsToStart"),
            "wmshistory": gdpconfig.get("WMSHistory"),
            "groups": data["rows"],
        }
        return Response(SharesSerializer(body).data)
