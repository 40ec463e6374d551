"""The home dashboard's figures. Apps add panels (e.g. recent brokerage failures) by
registering a function, so that the matcher needs none of them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.db.models import Max

from core import clock
from core.models import CycleRun
from matcher.models import JobStateSample, JobStatusHistory
from web.matcher import charts
from web.shares import charts as share_charts
from web.shares import overview as share_overview

PANELS: list[Callable[[object], dict | None]] = []
CHARTS: dict[str, Callable[[], str]] = {}
HOURS = 24


def register_panel(fn: Callable[[object], dict | None]):
    """fn(user) -> {"title", "link", "rows": [(text, url)], "empty"} or None; optional "id",
    "order" (lower first, default 100) and "alert" (drawn as one)."""
    PANELS.append(fn)
    return fn


def register_chart(name: str):
    """fn() -> a chart's HTML ("" for none), shown in the home page's slot `name` (the pilots
    app's pilots_chart)."""

    def add(fn: Callable[[], str]) -> Callable[[], str]:
        CHARTS[name] = fn
        return fn

    return add


def state_history(hours: int = HOURS) -> dict[str, tuple[list, list]]:
    samples = list(JobStateSample.objects.filter(at__gte=clock.now() - timedelta(hours=hours)))
    states = sorted({s for sample in samples for s in sample.counts})
    return {
        state: ([x.at for x in samples], [x.counts.get(state, 0) for x in samples])
        for state in states
    }


def last_cycle_runs() -> list[CycleRun]:
    """The latest run of every cycle kind, with its duration and error."""
    latest = CycleRun.objects.values("kind").annotate(last=Max("id")).values_list("last", flat=True)
    return list(CycleRun.objects.filter(pk__in=list(latest)).order_by("kind"))


def recent_timeouts(user, limit: int = 10) -> list[JobStatusHistory]:
    from matcher.models import Job

    jobs = Job.objects.visible_to(user)
    return list(
        JobStatusHistory.objects.filter(reason__istartswith="timeout", job__in=jobs)
        .select_related("job")
        .order_by("-id")[:limit]
    )


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
        "panels": sorted(
            (p for p in (fn(user) for fn in PANELS) if p), key=lambda p: p.get("order", 100)
        ),
    }
