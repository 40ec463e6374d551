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
        body = {"hours": hours, "group_by": group_by, "rows": _rows(report.rows(hours, group_by))}
        return Response(body)


def _rows(found: list[report.Row]) -> list[dict]:
    """The rows as AccountingRowSerializer gives them (its fields' own representations), at a
    fraction of its cost per row: a month by user is thousands of rows, of a few hundred hours."""
    fields = AccountingRowSerializer().fields
    hour, text, number, count = fields["hour"], fields["key"], fields["running"], fields["finished"]
    hours: dict = {}
    out = []
    for r in found:
        at = hours.get(r.hour)
        if at is None:
            at = hours[r.hour] = hour.to_representation(r.hour)
        out.append(
            {
                "hour": at,
                "key": text.to_representation(r.key),
                "running": number.to_representation(r.running),
                "finished": count.to_representation(r.finished),
                "failed": count.to_representation(r.failed),
                "cpu_hours": number.to_representation(r.cpu_hours),
                "wall_hours": number.to_representation(r.wall_hours),
            }
        )
    return out
