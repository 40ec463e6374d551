from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core import clock
from core.models import CycleRun
from simulation import services
from web.core.confirm import confirmation
from web.core.decorators import staff_required


def clock_page(request, refused: services.ClockError | None = None):
    """The clock, its controls and the last ticks; `refused`: a speed the clock refused, shown
    in its field with the reason (a 400), so that it can be corrected rather than typed again."""
    row = services.clock_row()
    ticks = CycleRun.objects.filter(kind="simulation")[:15]
    context = {"row": row, "now": clock.now(), "simulated": clock._simulated(), "ticks": ticks}
    if refused is not None:
        context["speed_value"] = request.POST.get("speed", "")
        context["speed_error"] = str(refused)
    return render(request, "simulation/clock.html", context, status=400 if refused else 200)


@staff_required
@require_POST
def clock_action(request):
    action = request.POST.get("action", "")
    if action == "pause":
        page = confirmation(
            request,
            title="Pause the simulated clock",
            question="Pause the simulated clock? Arrivals, cycles and pilots stand still until "
            "it is resumed.",
            action="Pause",
            back="/simulation/",
        )
        if page is not None:
            return page
    try:
        if action == "pause":
            services.set_clock(request.user, running=False)
        elif action == "resume":
            services.set_clock(request.user, running=True)
        elif action == "speed":
            services.set_clock(request.user, speed=request.POST.get("speed", ""))
        else:
            raise services.ClockError("action", f"unknown action {action!r}")
    except services.ClockError as exc:
        if action == "speed":
            return clock_page(request, refused=exc)
        messages.error(request, str(exc))
    else:
        row = services.clock_row()
        state = "running" if row.running else "paused"
        messages.success(request, f"The simulated clock is {state} at {row.speed:g}x.")
    return redirect("simulation-clock")
