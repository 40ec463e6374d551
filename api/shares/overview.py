"""GET /api/v1/shares/: expected and achieved shares with their corrections, per group and
per user, why each is off its share (the same figures and sentence as the Shares page), and
the corrector configuration in force (web.shares.overview; the waiting work and the pilots in it
come from the apps registered there)."""

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from core import gdpconfig
from shares import explanations
from web.core.filters import StrictQueryMixin
from web.shares import overview, preview


class CorrectionSerializer(serializers.Serializer):
    factor = serializers.FloatField()
    slices = serializers.DictField(child=serializers.FloatField())
    instance = serializers.CharField()
    at = serializers.DateTimeField()


class ReasonSerializer(serializers.Serializer):
    code = serializers.ChoiceField(
        choices=list(explanations.REASON_CODES.items()),
        help_text="which of shares.explanations' causes it is",
    )
    text = serializers.CharField(help_text="the sentence the Shares page shows")


class WhySerializer(serializers.Serializer):
    """The figures that say why an entity is where it is (the Shares page's same numbers)."""

    servable_jobs = serializers.IntegerField(
        help_text="waiting jobs that some active CE can serve at all (matcher.feasibility)"
    )
    blocked = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="waiting jobs no active CE can serve, by the first requirement that fails: "
        "CPUTime, Platform, Tag, Site, GridCE, NoCE or Together",
    )
    slots = serializers.IntegerField(
        help_text="slots (max running pilots) of the active CEs that could take some of its "
        "waiting jobs"
    )
    pilots_sent = serializers.IntegerField(
        help_text="pilots sent for its TaskQueues in the last hour (simulated clock)"
    )
    pilots_found_work = serializers.IntegerField(
        help_text="of pilots_sent, those that claimed a job"
    )
    pilots_no_work = serializers.IntegerField(
        help_text="of pilots_sent, those that ended (Done) without claiming a job"
    )
    rank = serializers.IntegerField(
        allow_null=True,
        help_text="its best TaskQueue's rank by priority among the TaskQueues with waiting "
        "jobs (1: the highest); null when nothing of it waits",
    )
    ranked = serializers.IntegerField(help_text="TaskQueues with waiting jobs, all entities")
    servable_by_cpu_segment = serializers.DictField(
        source="segments",
        child=serializers.IntegerField(),
        help_text="of servable_jobs, how many wait in each CPU segment (seconds); with "
        "MatchCPUSegmentPrecedence on, a pilot takes the highest segment it can run first",
    )
    correction_clamp = serializers.ChoiceField(
        source="clamp",
        choices=["upper", "lower"],
        allow_null=True,
        help_text="whether its correction is at its corrector's upper or lower clamp (the "
        "global factor, or every slice at its own); null when not",
    )
    reason = ReasonSerializer(
        allow_null=True,
        help_text="the main reason it is off its expected share (more than 2 points, or more "
        "than half of a small share, or nothing running while work a CE can serve waits); "
        "null when it is not (or when nothing ran or nothing of it waits)",
    )


class UserShareSerializer(WhySerializer):
    user = serializers.CharField(source="user.username")
    waiting_jobs = serializers.IntegerField()
    expected = serializers.FloatField()
    achieved = serializers.FloatField(allow_null=True)
    running = serializers.FloatField()
    correction = CorrectionSerializer(allow_null=True)


class RememberedChangeSerializer(serializers.Serializer):
    at = serializers.DateTimeField(source="change.at")
    old = serializers.CharField()
    new = serializers.CharField()
    until = serializers.DateTimeField(help_text="when the corrector's longest slice forgets it")
    slices = serializers.ListField(
        child=serializers.CharField(), help_text="the slices that still count the time before it"
    )


class GroupShareSerializer(WhySerializer):
    group = serializers.CharField(source="group.name")
    job_share = serializers.FloatField(source="group.job_share")
    job_sharing = serializers.BooleanField(source="group.job_sharing")
    waiting_jobs = serializers.IntegerField()
    taskqueues = serializers.IntegerField()
    expected = serializers.FloatField(allow_null=True)
    achieved = serializers.FloatField(allow_null=True)
    running = serializers.FloatField()
    correction = CorrectionSerializer(allow_null=True)
    remembered_changes = serializers.SerializerMethodField(
        help_text="its recent JobShare changes the corrector still counts (the Shares page's "
        "note under its row), newest first"
    )
    users = UserShareSerializer(many=True)

    @extend_schema_field(RememberedChangeSerializer(many=True))
    def get_remembered_changes(self, row) -> list:
        notes = (row.get("memory") or {}).get("changes", [])
        return RememberedChangeSerializer(notes, many=True).data


class SharesSerializer(serializers.Serializer):
    correction_enabled = serializers.BooleanField()
    priority_consolidation = serializers.CharField()
    share_correctors = serializers.ListField(child=serializers.CharField())
    wmshistory = serializers.JSONField()
    groups = GroupShareSerializer(many=True)


class SharesViewSet(StrictQueryMixin, viewsets.ViewSet):
    @extend_schema(
        summary="The fair shares",
        description="Each group's JobShare against what it is due and what it achieves, with "
        "the share corrector's correction and the reasons, and each of its users; the "
        "corrector's settings.",
        responses=SharesSerializer,
    )
    def list(self, request):
        data = overview.overview()
        preview.memory(data["rows"])  # each row's remembered JobShare changes
        body = {
            "correction_enabled": gdpconfig.get("EnableSharesCorrection"),
            "priority_consolidation": gdpconfig.get("PRIORITY_CONSOLIDATION"),
            "share_correctors": gdpconfig.get("ShareCorrectorsToStart"),
            "wmshistory": gdpconfig.get("WMSHistory"),
            "groups": data["rows"],
        }
        return Response(SharesSerializer(body).data)
