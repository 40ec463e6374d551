"""The one clock of the system.

Every time-based rule (timeouts, usage slices, pilot waiting hours, the simulator's schedules) reads
the time from `now()`, so that tests and the simulated grid can move time forward without sleeping.

Two ways to move it:
- `advance(seconds)`: a per-process offset, for tests;
- the simulated grid's shared clock (settings.SIMULATED_CLOCK, set by `make run`): a row every
  process reads (cached for a second), running `speed` times faster than real time from an
  anchor, or standing still while paused. Staff pause, resume and change its speed.

`label()` writes one of its timestamps in plain text as the pages' `when` filter shows it.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone
from django.utils.dateformat import format as date_format

_offset = timedelta(0)
_lock = threading.Lock()
_shared: dict = {"checked": 0.0, "state": None}
REFRESH_SECONDS = 1.0


def _simulated() -> bool:
    return bool(getattr(settings, "SIMULATED_CLOCK", False))


def _state():
    """(running, speed, anchor_real, anchor_sim) of the shared clock, or None."""
    mono = time.monotonic()
    with _lock:
        if mono - _shared["checked"] < REFRESH_SECONDS:
            return _shared["state"]
    from core.models import SimulationClock

    try:
        row = SimulationClock.objects.filter(pk=1).first()
    except DatabaseError:
        row = None
    state = (row.running, row.speed, row.anchor_real, row.anchor_sim) if row else None
    with _lock:
        _shared.update(checked=mono, state=state)
    return state


def invalidate() -> None:
    with _lock:
        _shared.update(checked=0.0, state=None)


def now() -> datetime:
    real = timezone.now()
    if _simulated():
        state = _state()
        if state is not None:
            running, speed, anchor_real, anchor_sim = state
            if not running:
                return anchor_sim + _offset
            return anchor_sim + (real - anchor_real) * speed + _offset
    return real + _offset


def is_simulated() -> bool:
    """Whether now() reads the simulated grid's clock rather than the real one."""
    return _simulated() and _state() is not None


def speed() -> float:
    """How many simulated seconds pass per real second (1 outside the simulation)."""
    if _simulated():
        state = _state()
        if state is not None:
            return state[1] if state[0] else 0.0
    return 1.0


def advance(seconds: float) -> None:
    """Move the clock forward (tests, simulator)."""
    global _offset
    _offset += timedelta(seconds=seconds)


def reset() -> None:
    global _offset
    _offset = timedelta(0)


def ago(seconds: float) -> str:
    """'3 min ago', 'in 2 h', 'just now' (whole units, rounded down)."""
    future, seconds = seconds < 0, abs(seconds)
    if seconds < 5:
        return "just now"
    size, unit = next(
        u for u in ((86400, "d"), (3600, "h"), (60, "min"), (1, "s")) if seconds >= u[0]
    )
    text = f"{int(seconds // size)} {unit}"
    return f"in {text}" if future else f"{text} ago"


def label(value: datetime, fmt: str = "Y-m-d H:i:s", *, relative: bool = True) -> str:
    """A timestamp this clock wrote, in plain text as the `when` filter shows it on pages:
    '14:03 (simulated), 3 min ago' while the simulated grid's clock drives this process (it
    runs faster than the reader's watch), '14:03, 3 min ago' otherwise. `fmt` is a Django date
    format; relative=False for text stored and read later, when "ago" would be stale."""
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    text = date_format(local, fmt)
    if is_simulated():
        text += " (simulated)"
    if relative:
        text += f", {ago((now() - value).total_seconds())}"
    return text
