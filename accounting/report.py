"""What the accounting page and API show: per hour and per key of a grouping (group, user,
site, CE) over a window, from the hourly bins (never the jobs)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Sum

from accounting.models import AccountingBin
from core import clock

GROUPINGS = {"group": "group__name", "user": "user__username", "site": "site", "ce": "ce"}
WINDOWS = {6: "last 6 hours", 24: "last day", 168: "last week", 720: "last 30 days"}
NONE = "(none)"  # a job not placed at a site or CE


@dataclass
class Row:
    hour: datetime
    key: str
    running: float  # average running jobs in the hour (so far, for the current one)
    finished: int
    failed: int
    cpu_hours: float
    wall_hours: float


@dataclass
class Total:
    key: str
    running: float  # average over the window
    finished: int
    failed: int
    cpu_hours: float
    wall_hours: float

    @property
    def efficiency(self) -> float | None:
        ended = self.finished + self.failed
        return self.finished / ended if ended else None


def _hour(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def rows(hours: int, group_by: str) -> list[Row]:
    """One row per hour and key with anything in it, by hour then key."""
    now = clock.now()
    current = _hour(now)
    key = GROUPINGS[group_by]
    bins = (
        AccountingBin.objects.filter(hour__gte=current - timedelta(hours=hours - 1))
        .values("hour", key)
        .annotate(
            rm=Sum("running_minutes"),
            fin=Sum("finished"),
            fail=Sum("failed"),
            cpu=Sum("cpu_seconds"),
            wall=Sum("wall_seconds"),
        )
        .order_by("hour", key)
    )
    elapsed = min(60.0, max(1.0, (now - current).total_seconds() / 60))
    return [
        Row(
            hour=b["hour"],
            key=b[key] or NONE,
            running=b["rm"] / (elapsed if b["hour"] == current else 60.0),
            finished=b["fin"],
            failed=b["fail"],
            cpu_hours=b["cpu"] / 3600,
            wall_hours=b["wall"] / 3600,
        )
        for b in bins
    ]


def totals(found: list[Row], hours: int) -> list[Total]:
    """Per key over the window, the busiest first."""
    by_key: dict[str, Total] = {}
    for r in found:
        t = by_key.setdefault(r.key, Total(r.key, 0.0, 0, 0, 0.0, 0.0))
        t.running += r.running / hours
        t.finished += r.finished
        t.failed += r.failed
        t.cpu_hours += r.cpu_hours
        t.wall_hours += r.wall_hours
    return sorted(by_key.values(), key=lambda t: (-t.running, -t.finished, t.key))
