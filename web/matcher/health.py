"""The home page's health panel: what keeps pilots from being sent or jobs from being placed,
each alert linking to where the decision is recorded.

Apps above the matcher add their alerts by registering a source (the pilots app: TaskQueues the
director could not send pilots for, full submit pools, credentials running out; the brokerage:
tasks it cannot place), never by an import.
"""

from __future__ import annotations

from collections.abc import Callable

from web.matcher import dashboard

DIRECTOR_URL = "/pilots/director/"
MAX_ROWS = 12

SOURCES: list[Callable[[object], list[tuple[str, str]]]] = []


def register(fn: Callable[[object], list[tuple[str, str]]]):
    """fn(user) -> [(alert text, url)] for the health panel, shown in the order registered."""
    SOURCES.append(fn)
    return fn


@dashboard.register_panel
def health_panel(user) -> dict:
    rows = [row for source in SOURCES for row in source(user)]
    more = len(rows) - MAX_ROWS
    if more > 0:
        rows = [*rows[:MAX_ROWS], (f"… and {more} more", DIRECTOR_URL)]
    return {
        "id": "health",
        "order": 0,
        "top": True,  # above the charts: the first thing an operator reads
        "alert": bool(rows),
        "title": "Health: what keeps work from running",
        "link": DIRECTOR_URL,
        "rows": rows,
        "empty": "Nothing blocks the grid: the director sends pilots for every TaskQueue it "
        "draws, its pools have room, credentials are valid, every task found a place.",
    }
