"""A job's times as its owner reads them. Its history is stamped on the grid's clock, which the
simulated grid runs faster than real time (what the timeouts and the shares read); how long it
waited and how long it ran are told in real seconds, the time its owner spent waiting for it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from core import clock
from matcher.lifecycle import STARTED_STATES, WAITING_STATES


class _Change(NamedTuple):
    at: datetime
    to_status: str


def durations(job, history: Iterable) -> dict[str, float | None]:
    """{"waited_seconds", "ran_seconds"}: the real seconds the job spent not yet matched to a
    pilot (WAITING_STATES) and with its pilot at work on it (STARTED_STATES), over its whole
    history (a rescheduled job waits and runs again), up to now while it is still in one.
    ran_seconds is None for a job that never started; either is None when a stretch of it fell
    in a pause of the simulated clock, whose real length is not known."""
    changes = [_Change(h.at, h.to_status) for h in sorted(history, key=lambda h: (h.at, h.pk))]
    if not changes:  # a job loaded without its history: its present state since it changed
        changes = [_Change(job.status_changed, job.status)]
    spent: dict[str, list[float | None]] = {"waited": [], "ran": []}
    for i, change in enumerate(changes):
        if change.to_status in WAITING_STATES:
            kind = "waited"
        elif change.to_status in STARTED_STATES:
            kind = "ran"
        else:
            continue
        end = changes[i + 1].at if i + 1 < len(changes) else None  # None: still in it
        spent[kind].append(clock.real_seconds_between(change.at, end))
    return {
        "waited_seconds": _total(spent["waited"]) if spent["waited"] else 0.0,
        "ran_seconds": _total(spent["ran"]) if spent["ran"] else None,
    }


def _total(stretches: list[float | None]) -> float | None:
    if any(s is None for s in stretches):
        return None
    return round(sum(s for s in stretches if s is not None), 1)
