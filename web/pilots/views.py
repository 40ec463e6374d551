from django.db.models import Sum
from django.shortcuts import get_object_or_404, render

from core.models import CycleRun
from matcher.models import Job
from pilots import local_pilots, panda_pilots
from pilots import output as pilot_output
from pilots.models import DirectorDecision, Pilot
from pilots.submit_pools import LocalBackend
from web.core.listing import list_page
from web.core.paging import paginate
from web.pilots import charts
from web.pilots.filters import PilotFilterSet
from web.pilots.health import pilot_summary


def pilot_list(request):
    filterset = PilotFilterSet(request.GET, queryset=Pilot.objects.visible_to(request.user))
    staff = request.user.is_staff

    def context() -> dict:  # the page's only: an export reads no summary
        return {"summary": pilot_summary() if staff else []}

    return list_page(request, filterset, "pilots/pilot_list.html", context, name="pilots")


def pilot_detail(request, pk):
    pilot = get_object_or_404(Pilot.objects.visible_to(request.user), pk=pk)
    context = {
        "pilot": pilot,
        "history": pilot.history.all(),
        "jobs": Job.objects.visible_to(request.user).filter(pilot=pilot),
        "log": pilot_output.lines_of(pilot.pk),
        "log_limit": pilot_output.MAX_LINES,
        # A local (or PanDA's own) pilot's process output, on this host (staff: it is the
        # machine's, not the job's): what a pilot that never registered said before it died.
        "process_output": local_pilots.output_tail(pilot.reference)
        if pilot.grid_type in (LocalBackend.grid_type, panda_pilots.GRID_TYPE)
        and request.user.is_staff
        else None,
    }
    return render(request, "pilots/pilot_detail.html", context)


def director(request):
    runs = list(CycleRun.objects.filter(kind="director")[:30])
    run_ids = [r.pk for r in runs]
    rows = list(
        DirectorDecision.objects.filter(cycle_run__in=run_ids, submitted__gt=0).values(
            "at", "task_queue_id", "submitted"
        )
    )
    last = runs[0] if runs else None
    decisions = (
        DirectorDecision.objects.filter(cycle_run=last.pk).order_by("-submitted", "-lam")
        if last
        else DirectorDecision.objects.none()
    )
    # ?task_queue=N: that TaskQueue's decisions over the cycles shown (the health panel and
    # a job's "why" link here); anything but an id is an error, not the whole table.
    wanted, tq_error = request.GET.get("task_queue"), ""
    if wanted is not None:
        if wanted.isdigit():
            decisions = DirectorDecision.objects.filter(
                task_queue_id=int(wanted), cycle_run__in=run_ids
            ).order_by("-cycle_run")
        else:
            tq_error = f"task_queue must be a TaskQueue id, not {wanted[:40]!r}"
            decisions = DirectorDecision.objects.none()
    per_run = dict(
        DirectorDecision.objects.filter(cycle_run__in=run_ids)
        .values_list("cycle_run")
        .annotate(n=Sum("submitted"))
    )
    context = {
        "runs": [(r, per_run.get(r.pk, 0)) for r in runs],
        "last": last,
        "page": paginate(request, decisions),
        "chart": charts.to_html(charts.director_figure(rows)) if rows else "",
        "task_queue": wanted if wanted and wanted.isdigit() else "",
        "tq_error": tq_error,
    }
    return render(request, "pilots/director.html", context)
