from core import clock


def simulated_clock(request):
    """`sim_clock` on every page while the simulated grid's clock drives this process: the
    header says that the times shown are simulated, and how fast they run."""
    if not clock.is_simulated():
        return {}
    return {"sim_clock": {"speed": clock.speed()}}
