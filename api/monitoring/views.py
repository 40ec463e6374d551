"""GET /api/v1/monitoring/...: the four summaries as JSON, the same figures as their pages."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, viewsets
from rest_framework.response import Response

from api.core.schema import AutoSchema
from api.monitoring import serializers as s
from web.core.filters import StrictQueryMixin
from web.monitoring import error_summary, held_back, job_summary, pilot_summary


class OneObjectSchema(AutoSchema):
    """A summary is one object, not a list, though the router serves it as the `list` action."""

    def _is_list_view(self, serializer=None) -> bool:
        return False


class SummaryViewSet(viewsets.ViewSet):
    schema = OneObjectSchema()


class JobSummaryViewSet(StrictQueryMixin, SummaryViewSet):
    """Jobs per site and state (DIRAC's JobSummary), with each site's efficiency."""

    @extend_schema(summary="Jobs per site and state", responses=s.JobSummarySerializer)
    def list(self, request):
        found = job_summary.summary(request.user)

        def site(row_site, cells, total, finished, failed, efficiency):
            return {
                "site": row_site,
                "counts": {st: c.count for st, c in zip(found.states, cells, strict=True)},
                "total": total,
                "finished": finished,
                "failed": failed,
                "efficiency": efficiency,
            }

        body = {
            "states": found.states,
            "sites": [
                site(r.site, r.cells, r.total.count, r.finished, r.failed, r.efficiency)
                for r in found.rows
            ],
            "totals": site(
                "", found.totals, found.total.count, found.finished, found.failed,
                found.efficiency,
            ),
        }  # fmt: skip
        return Response(s.JobSummarySerializer(body).data)


class HeldBackViewSet(StrictQueryMixin, SummaryViewSet):
    """Waiting jobs held back: by the first failing rule per site and CE, and by TaskQueue."""

    @extend_schema(summary="Waiting jobs held back, and why", responses=s.HeldBackSerializer)
    def list(self, request):
        return Response(s.HeldBackSerializer(held_back.summary(request.user)).data)


def _pilot_row(row: pilot_summary.Row) -> dict:
    return {
        "site": row.site,
        "ce": row.ce,
        "counts": {st: c.count for st, c in zip(pilot_summary.STATES, row.cells, strict=True)},
        "total": row.total.count,
        "jobs": row.jobs,
        "ended": row.ended,
        "ended_with_job": row.ended_with_job,
        "pilots_per_job": row.pilots_per_job,
        "efficiency": row.efficiency,
        "ces": [_pilot_row(ce) for ce in row.ces],
    }


class PilotSummaryViewSet(StrictQueryMixin, SummaryViewSet):
    """Pilots per site and CE and state, pilots per job, pilot job efficiency."""

    @extend_schema(summary="Pilots per site, CE and state", responses=s.PilotSummarySerializer)
    def list(self, request):
        found = pilot_summary.summary(request.user)
        body = {
            "states": found.states,
            "sites": [_pilot_row(r) for r in found.sites],
            "total": _pilot_row(found.total) if found.total else None,
        }
        return Response(s.PilotSummarySerializer(body).data)


HOURS = OpenApiParameter(
    "hours",
    int,
    description=f"the window: failed in the last N hours, 1 to {error_summary.MAX_HOURS} "
    f"(default {error_summary.DEFAULT_HOURS})",
)


class ErrorSummaryViewSet(SummaryViewSet):
    """Failed jobs over a time window, by error code and category, by reason, site, task and
    user, per site and error category, and per time bucket."""

    @extend_schema(
        summary="Failed jobs by error",
        parameters=[HOURS],
        responses={
            200: s.ErrorSummarySerializer,
            400: OpenApiResponse(description="a bad `hours` or an unknown parameter, named"),
        },
    )
    def list(self, request):
        unknown = sorted(k for k in request.query_params if k not in ("hours", "format"))
        if unknown:
            raise exceptions.ValidationError(
                {k[:100]: ["Unknown parameter; this summary reads hours."] for k in unknown}
            )
        try:
            hours = error_summary.parse_hours(request.query_params.get("hours"))
        except error_summary.BadWindow as exc:
            raise exceptions.ValidationError({"hours": [str(exc)]}) from None
        found = error_summary.summary(request.user, hours)
        body = {
            **{k: getattr(found, k) for k in ("hours", "since", "until", "total", "bucket")},
            "histogram": [{"at": at, "failed": n} for at, n in found.histogram],
            **{
                name: [vars(g) for g in getattr(found, name)]
                for name in ("by_code", "by_category", "by_reason", "by_site", "by_task", "by_user")
            },
            "site_errors": [
                {
                    "site": row.site,
                    "counts": dict(zip(found.matrix.categories, row.cells, strict=True)),
                    "total": row.total,
                }
                for row in (found.matrix.rows if found.matrix else [])
            ],
        }
        return Response(s.ErrorSummarySerializer(body).data)
