"""The API's `export/` action of a list: the list page's CSV or JSON export (web.core.listing),
for the same FilterSet, sort and visibility as the viewset's list.

`GET /api/v1/jobs/export/?status=failed&ordering=-cpu_time&format=csv` (or `Accept: text/csv`)
streams CSV; `format=json` (the default) a JSON array of objects with the same keys.
"""

from __future__ import annotations

import csv
import io

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.decorators import action
from rest_framework.renderers import BaseRenderer

from api.core.codec import OrjsonRenderer
from web.core import listing


class ExportJSONRenderer(OrjsonRenderer):
    """A JSON array streamed by the view; errors (400, 401...) rendered as usual."""


class ExportCSVRenderer(BaseRenderer):
    """CSV streamed by the view; an error (a dict) as `parameter,error` rows."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["parameter", "error"])
        items = data.items() if isinstance(data, dict) else [("detail", data)]
        for name, errors in items:
            for error in errors if isinstance(errors, list) else [errors]:
                writer.writerow([name, str(error)])
        return out.getvalue().encode()


EXPORT_DESCRIPTION = (
    "Everything the list's filters select, in its sort order, streamed: CSV (`format=csv` or "
    "`Accept: text/csv`) or a JSON array of objects with the same keys (`format=json`). The "
    "same parameters as the list, without paging."
)


class ExportMixin:
    """A list viewset's `export/` action. The viewset has a `filterset_class` whose
    `export_fields` name the columns, and `export_name` names the file."""

    export_name = "export"

    @extend_schema(
        filters=True,
        description=EXPORT_DESCRIPTION,
        responses={
            (200, "application/json"): OpenApiResponse(
                OpenApiTypes.ANY, description="a JSON array of objects"
            ),
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV, a header"),
            (400, "application/json"): OpenApiResponse(description="a bad parameter, named"),
        },
    )
    @action(
        detail=False,
        methods=["get"],
        renderer_classes=[ExportJSONRenderer, ExportCSVRenderer],
        pagination_class=None,
    )
    def export(self, request):
        queryset = self.filter_queryset(self.get_queryset())
        fmt = request.accepted_renderer.format
        fields = self.filterset_class.export_fields
        return listing.export_response(queryset, fields, fmt, self.export_name)
