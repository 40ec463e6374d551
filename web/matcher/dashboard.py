"""The home dashboard's figures: the matcher's charts and cycles, the shares' chart, and the
panels and charts of the areas that serve the work (the health panel, recent brokerage failures,
pilots per site)."""

from __future__ import annotations

from datetime import timedelta

from core import clock
from core.cycle_runs import latest_runs
from core.models import CycleRun
from matcher.models import JobStateSample
from timeouts.models import TimeoutAction
from web.brokerage import why as brokerage_why
from web.matcher import charts, health
from web.pilots import health as pilots_health
from web.shares import charts as share_charts
from web.shares import overview as share_overview

HOURS = 24
# A panel is fn(user) -> {"title", "link", "rows": [(text, url)], "empty"} or None; optional "id",
# "alert" (drawn as one) and "top" (above the charts). In their order on the page.
PANELS = (health.health_panel, brokerage_why.brokerage_failures)
# A chart is fn() -> its HTML ("" for none), shown in the home page's slot of that name.
CHARTS = {"pilots_chart": pilots_health.pilots_chart}


def state_history(hours: int = HOURS) -> dict[str, tuple[list, list]]:
    samples = list(JobStateSample.objects.filter(at__gte=clock.now() - timedelta(hours=hours)))
    states = sorted({s for sample in samples for s in sample.counts})
    return {
        state: ([x.at for x in samples], [x.counts.get(state, 0) for x in samples])
        for state in states
    }


def last_cycle_runs() -> list[CycleRun]:
    """The latest run of every cycle kind, with its duration and error."""
    return latest_runs()


def recent_timeouts(user, limit: int = 10) -> list[TimeoutAction]:
    """The latest moves of the timeouts cycle on the jobs the user may see, newest first: its
    TimeoutAction rows (one per move, with the reason the job's history records), read on their
    index by time. Not the job history filtered by its reason: no index serves that, and with
    fewer than `limit` timeouts the scan read every status change ever recorded."""
    return list(TimeoutAction.objects.visible_to(user).order_by("-at", "-id")[:limit])


def figures(user) -> dict:
    history = state_history()
    shares = share_overview.share_history(hours=HOURS)
    return {
        "states_chart": charts.to_html(charts.states_over_time_figure(history)) if history else "",
        "shares_chart": charts.to_html(share_charts.share_figure(shares))
        if shares["achieved"]
        else "",
        **{name: fn() for name, fn in CHARTS.items()},
        "cycle_runs": last_cycle_runs(),
        "timeouts": recent_timeouts(user),
        "panels": [p for p in (fn(user) for fn in PANELS) if p],
    }
