"""The one clock of the system.

Every time-based rule (timeouts, usage slices, pilot waiting hours, the simulator's schedules) reads
the time from `now()`, so that tests and the simulated grid can move time forward without sleeping.
"""

from datetime import datetime, timedelta

from django.utils import timezone

_offset = timedelta(0)


def now() -> datetime:
    return timezone.now() + _offset


def advance(seconds: float) -> None:
    """Move the clock forward (tests, simulator)."""
    global _offset
    _offset += timedelta(seconds=seconds)


def reset() -> None:
    global _offset
    _offset = timedelta(0)
