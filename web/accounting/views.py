"""The accounting page: running jobs, jobs ended and CPU delivered over a window, grouped by
group, user, site or CE, from the hourly bins summed per key (per day for a window drawn per
day); `?format=csv` exports the hourly rows."""

from __future__ import annotations

import csv
from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

from accounting import report
from core import clock
from web.accounting import charts
from web.accounting.forms import AccountingForm
from web.core.charts import to_html

CSV_HEAD = ["hour", "key", "running", "finished", "failed", "cpu_hours", "wall_hours"]
JOB_FILTER = {"group": "group", "user": "owner", "site": "site"}  # the jobs list's parameters


def csv_response(found: list[report.Row], group_by: str, hours: int) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="accounting-{group_by}-{hours}h.csv"'
    out = csv.writer(response)
    out.writerow(CSV_HEAD)
    for r in found:
        out.writerow([r.hour.isoformat(), r.key, round(r.running, 3), r.finished, r.failed,
                      round(r.cpu_hours, 4), round(r.wall_hours, 4)])  # fmt: skip
    return response


def _jobs_link(group_by: str, key: str) -> str:
    name = JOB_FILTER.get(group_by)
    if name is None or key == report.NONE:
        return ""
    return reverse("job-list") + "?" + urlencode({name: key})


def accounting_page(request):
    form = AccountingForm(request.GET)
    if not form.is_valid():
        return render(request, "accounting/accounting.html", {"form": form}, status=400)
    hours, group_by = form.cleaned_data["hours"], form.cleaned_data["group_by"]
    covered = report.coverage(hours)
    if request.GET.get("format") == "csv":
        return csv_response(report.rows(hours, group_by, covered), group_by, hours)
    bucket = charts.bucket_of(hours)
    # Drawn per day: the same totals and figures from a row per day and key, not per hour.
    found: list[report.Row] | list[report.Cell] = (
        report.daily(hours, group_by, covered)
        if bucket == "day"
        else report.rows(hours, group_by, covered)
    )
    totals = report.totals(found, covered)
    for t in totals:
        t.link = _jobs_link(group_by, t.key)
    charts_html = {}
    if found:
        drawn, others = charts.fold(found, [t.key for t in totals])
        by = {"bucket": bucket, "group_by": group_by, "others": others}
        per = charts.per_bucket_figure
        now = clock.now()

        def html(fig) -> str:
            return to_html(charts.over_window(fig, hours, bucket, now))

        charts_html = {
            "bucket": bucket,
            "running": html(charts.running_figure(drawn, covered, **by)),
            "ended": html(per(drawn, lambda r: r.finished, "jobs finished", **by)),
            "failed": html(per(drawn, lambda r: r.failed, "jobs failed", **by)),
            "cpu": html(per(drawn, lambda r: r.cpu_hours, "CPU hours", counts=False, **by)),
            "cpu_efficiency": html(charts.cpu_efficiency_figure(drawn, **by)),
        }
    query = urlencode({"hours": hours, "group_by": group_by})
    context = {
        "form": form,
        "hours": hours,
        "covered_hours": covered.hours,
        "group_by": group_by,
        "totals": totals,
        "charts": charts_html,
        "csv_url": f"{request.path}?{query}&format=csv",
        "api_url": reverse("api:accounting-list") + "?" + query,
    }
    return render(request, "accounting/accounting.html", context)
