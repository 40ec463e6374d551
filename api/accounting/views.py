"""GET /api/v1/accounting/?hours=&group_by=: the accounting page's hourly rows as JSON (the
same bins, the same window and grouping rules)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from accounting import report
from web.accounting.forms import AccountingForm


class AccountingRowSerializer(serializers.Serializer):
    hour = serializers.DateTimeField(help_text="the start of the hour")
    key = serializers.CharField(help_text=f"the group, user, site or CE ({report.NONE}: none)")
    running = serializers.FloatField(help_text="average running jobs in the hour (so far)")
    finished = serializers.IntegerField()
    failed = serializers.IntegerField()
    cpu_hours = serializers.FloatField(help_text="CPU time the payloads reported")
    wall_hours = serializers.FloatField(help_text="wall time the payloads reported")


class AccountingSerializer(serializers.Serializer):
    hours = serializers.IntegerField()
    group_by = serializers.ChoiceField(choices=list(report.GROUPINGS))
    rows = AccountingRowSerializer(many=True)


class AccountingViewSet(viewsets.ViewSet):
    @extend_schema(
        summary="What the grid delivered",
        description="Per hour over the last `hours`, and per `group_by` (group, user, site or "
        "CE): the jobs running on average, those finished and failed, and the CPU and wall "
        "hours their payloads reported.",
        parameters=[
            OpenApiParameter("hours", int, enum=list(report.WINDOWS), description="the window"),
            OpenApiParameter("group_by", str, enum=list(report.GROUPINGS)),
        ],
        responses=AccountingSerializer,
    )
    def list(self, request):
        unknown = sorted(set(request.query_params) - {"hours", "group_by", "format"})
        if unknown:
            raise serializers.ValidationError({k[:100]: ["Unknown parameter."] for k in unknown})
        form = AccountingForm(request.query_params)
        if not form.is_valid():
            raise serializers.ValidationError(form.errors)
        hours, group_by = form.cleaned_data["hours"], form.cleaned_data["group_by"]
        body = {"hours": hours, "group_by": group_by, "rows": report.rows(hours, group_by)}
        return Response(AccountingSerializer(body).data)
