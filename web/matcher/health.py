"""The home page's health panel: first the grid's machinery, as /healthz judges it (one verdict,
web.core.health.health(): the database, the migrations, the django-q2 cluster, every cycle on
its real-time schedule), then what keeps pilots from being sent or jobs from being placed, each
alert linking to where the decision is recorded: tasks the brokerage cannot place, then the
director's alerts (TaskQueues it could not send pilots for, full submit pools, credentials
running out).
"""

from __future__ import annotations

from web.brokerage.health import unbrokered_tasks
from web.core import health as grid_health
from web.pilots.health import DIRECTOR_URL, director_alerts

MAX_ROWS = 12

# An alert source is fn(user) -> [(alert text, url)], shown in this order.
SOURCES = (unbrokered_tasks, director_alerts)


def machinery_verdict() -> dict:
    """/healthz's verdict in words: {"ok", "text", "rows": [(what fails, url)]}."""
    healthy, report = grid_health.health()
    if healthy:
        text = (
            "The grid's machinery is healthy (/healthz answers 200): the database answers, "
            "the django-q2 cluster keeps the schedules and every cycle ran on its schedule."
        )
        return {"ok": True, "text": text, "rows": []}
    text = "The grid's machinery is unhealthy (/healthz answers 503):"
    return {"ok": False, "text": text, "rows": grid_health.explain(report)}


def health_panel(user) -> dict:
    rows = [row for source in SOURCES for row in source(user)]
    more = len(rows) - MAX_ROWS
    if more > 0:
        rows = [*rows[:MAX_ROWS], (f"… and {more} more", DIRECTOR_URL)]
    verdict = machinery_verdict()
    return {
        "id": "health",
        "top": True,  # above the charts: the first thing an operator reads
        "alert": bool(rows) or not verdict["ok"],
        "title": "Health: what keeps work from running",
        "link": DIRECTOR_URL,
        "verdict": verdict,
        "rows": rows,
        "empty": "Nothing blocks the grid: the director sends pilots for every TaskQueue it "
        "draws, its pools have room, credentials are valid, every task found a place.",
    }
