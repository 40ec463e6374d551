"""The four summaries' pages; the figures come from one module per summary."""

from django.shortcuts import redirect, render

from web.core.charts import to_html
from web.monitoring import charts, error_summary, held_back, job_summary, pilot_summary


def index(request):
    return redirect("monitoring:job-summary")


def jobs(request):
    context = {"summary": job_summary.summary(request.user), "tab": "jobs"}
    return render(request, "monitoring/job_summary.html", context)


def held(request):
    context = {"summary": held_back.summary(request.user), "tab": "held"}
    return render(request, "monitoring/held_back.html", context)


def pilots(request):
    context = {"summary": pilot_summary.summary(request.user), "tab": "pilots"}
    return render(request, "monitoring/pilot_summary.html", context)


def errors(request):
    context = {"tab": "errors", "windows": error_summary.WINDOWS}
    try:
        hours = error_summary.parse_hours(request.GET.get("hours"))
    except error_summary.BadWindow as exc:
        context["error"] = str(exc)
        return render(request, "monitoring/error_summary.html", context, status=400)
    found = error_summary.summary(request.user, hours)
    context["summary"] = found
    if found.total:
        figure = charts.failures_figure(found.histogram, found.bucket, found.since, found.until)
        context["chart"] = to_html(figure)
    return render(request, "monitoring/error_summary.html", context)
