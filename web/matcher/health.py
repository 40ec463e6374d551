"""The home page's health panel: what keeps pilots from being sent or jobs from being placed,
each alert linking to where the decision is recorded: tasks the brokerage cannot place, then the
director's alerts (TaskQueues it could not send pilots for, full submit pools, credentials
running out).
"""

from __future__ import annotations

from web.brokerage.health import unbrokered_tasks
from web.pilots.health import DIRECTOR_URL, director_alerts

MAX_ROWS = 12

# An alert source is fn(user) -> [(alert text, url)], shown in this order.
SOURCES = (unbrokered_tasks, director_alerts)


def health_panel(user) -> dict:
    rows = [row for source in SOURCES for row in source(user)]
    more = len(rows) - MAX_ROWS
    if more > 0:
        rows = [*rows[:MAX_ROWS], (f"… and {more} more", DIRECTOR_URL)]
    return {
        "id": "health",
        "top": True,  # above the charts: the first thing an operator reads
        "alert": bool(rows),
        "title": "Health: what keeps work from running",
        "link": DIRECTOR_URL,
        "rows": rows,
        "empty": "Nothing blocks the grid: the director sends pilots for every TaskQueue it "
        "draws, its pools have room, credentials are valid, every task found a place.",
    }
