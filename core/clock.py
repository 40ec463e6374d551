"""The one clock of the system.

Every time-based rule (timeouts, usage slices, pilot waiting hours, the simulator's schedules) reads
the time from `now()`, so that tests and the simulated grid can move time forward without sleeping.

Two ways to move it:
- `advance(seconds)`: a per-process offset, for tests;
- the simulated grid's shared clock (settings.SIMULATED_CLOCK, set by `make run`): a row every
  process reads (cached for a second), running `speed` times faster than real time from an
  anchor, or standing still while paused. Staff pause, resume and change its speed.

Two clocks, never confused: what this clock wrote (jobs, cycles, brokerage) stays on it, but how
long ago something was, and how long it took, is told on the reader's watch: `real_age()` turns a
moment of this clock into real seconds ago, and the pages, the API and `label()` say "ago" with it
while the times themselves are labelled simulated.
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
JUST_NOW = 5  # seconds: what ago() calls "just now"


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


def real_time(value: datetime, *, at_least: bool = False) -> datetime | None:
    """The wall-clock moment at which this clock read `value`: `value` itself outside the
    simulated grid (and tests' advance()).

    Exact for the moments since the shared clock last changed (paused, resumed, sped up or
    slowed down): it kept one speed since. An earlier moment is taken at the speed the clock has
    now, which is an estimate (the row keeps only its last change); with at_least=True it is
    the change itself, which it certainly is not after (health judges with that: never
    "overdue" from a guess). While the clock stands paused, every moment written since the
    pause reads the same time: when it was on the wall clock is unknown (None; now at_least)
    unless the pause began moments ago, and a future moment does not come (None)."""
    if not _simulated() or (state := _state()) is None:
        return value - _offset
    running, rate, anchor_real, anchor_sim = state
    after_change = value - (anchor_sim + _offset)  # < 0: before the change
    if after_change < timedelta(0):
        return anchor_real if at_least else anchor_real + after_change / rate
    if running:
        return anchor_real + after_change / rate  # exact, since the change (or ahead of now)
    real = timezone.now()
    if at_least:
        return real
    if not after_change and real - anchor_real < timedelta(seconds=JUST_NOW):
        return anchor_real  # written during a pause of a few seconds: "just now" either way
    return None


def real_age(value: datetime, *, at_least: bool = False) -> float | None:
    """How many real seconds ago this clock read `value` (negative: how many until it will),
    from real_time(): None when not known, a lower bound with at_least=True."""
    real = real_time(value, at_least=at_least)
    return None if real is None else (timezone.now() - real).total_seconds()


def real_seconds_between(start: datetime, end: datetime | None = None) -> float | None:
    """Real seconds from `start` to `end` (now when None), both on this clock; None when either
    is a moment of a pause (real_time)."""
    first = real_time(start)
    last = timezone.now() if end is None else real_time(end)
    if first is None or last is None:
        return None
    return max(0.0, (last - first).total_seconds())


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
    if seconds < JUST_NOW:
        return "just now"
    size, unit = next(
        u for u in ((86400, "d"), (3600, "h"), (60, "min"), (1, "s")) if seconds >= u[0]
    )
    text = f"{int(seconds // size)} {unit}"
    return f"in {text}" if future else f"{text} ago"


def real_ago(value: datetime) -> str:
    """How long ago `value` (a moment of this clock) was on the reader's watch: '3 min ago',
    'in 2 h'. While the clock stands paused, a moment written during the pause is 'during the
    pause' (its real time is not known) and a future one is 'in 2 min once the clock runs
    again' (at its speed)."""
    age = real_age(value)
    if age is not None:
        return ago(age)
    ahead = (value - now()).total_seconds()
    state = _state()
    if ahead <= 0 or state is None:
        return "during the pause"
    return f"{ago(-ahead / state[1])} once the clock runs again"


def label(value: datetime, fmt: str = "Y-m-d H:i:s", *, relative: bool = True) -> str:
    """A timestamp this clock wrote, in plain text as the `when` filter shows it on pages:
    '14:03 (simulated), 3 min ago' while the simulated grid's clock drives this process (it
    runs faster than the reader's watch), '14:03, 3 min ago' otherwise; "ago" is real time
    either way (real_ago). `fmt` is a Django date format; relative=False for text stored and
    read later, when "ago" would be stale."""
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    text = date_format(local, fmt)
    if is_simulated():
        text += " (simulated)"
    if relative:
        text += f", {real_ago(value)}"
    return text
