from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core import clock
from core.models import CycleRun
from simulation import services
from web.core.confirm import confirmation
from web.core.decorators import staff_required


def clock_page(request):
    row = services.clock_row()
    ticks = CycleRun.objects.filter(kind="simulation")[:15]
    return render(
        request,
        "simulation/clock.html",
        {"row": row, "now": clock.now(), "simulated": clock._simulated(), "ticks": ticks},
    )


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
        messages.error(request, str(exc))
    else:
        row = services.clock_row()
        state = "running" if row.running else "paused"
        messages.success(request, f"The simulated clock is {state} at {row.speed:g}x.")
    return redirect("simulation-clock")
