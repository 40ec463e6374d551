"""What the accounting page and API show: per hour and per key of a grouping (group, user,
site, CE) over a window, from the hourly bins (never the jobs)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Min, Sum

from accounting.models import AccountingBin, AccountingMark
from core import clock

GROUPINGS = {"group": "group__name", "user": "user__username", "site": "site", "ce": "ce"}
WINDOWS = {6: "last 6 hours", 24: "last day", 168: "last week", 720: "last 30 days"}
NONE = "(none)"  # a job not placed at a site or CE
HOUR = timedelta(hours=1)


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
    running: float  # average over the time the data covers (Coverage)
    finished: int
    failed: int
    cpu_hours: float
    wall_hours: float

    @property
    def efficiency(self) -> float | None:
        ended = self.finished + self.failed
        return self.finished / ended if ended else None

    @property
    def cpu_efficiency(self) -> float | None:
        """CPU time over wall time, as the payloads reported them (none without wall time)."""
        return self.cpu_hours / self.wall_hours if self.wall_hours else None


@dataclass(frozen=True)
class Coverage:
    """The part of a window the accounting's data covers: from the window's start, or the
    first hour binned if the accounting began later (bins are kept AccountingDays), to its
    last sample (the cycle's mark), or now. An average over the window divides by this time,
    not by the window's: a grid sampled for two hours of a 30-day window ran what it ran in
    those two hours."""

    since: datetime
    until: datetime

    @property
    def hours(self) -> float:
        return max(0.0, (self.until - self.since).total_seconds() / 3600)

    def hours_within(self, start: datetime, end: datetime) -> float:
        """The hours of [start, end) the data covers."""
        covered = min(end, self.until) - max(start, self.since)
        return max(0.0, covered.total_seconds() / 3600)


def coverage(hours: int) -> Coverage:
    """What the data covers of the window of the last `hours` (as `rows` reads it)."""
    now = clock.now()
    start = _hour(now) - timedelta(hours=hours - 1)
    first = AccountingBin.objects.aggregate(first=Min("hour"))["first"]
    mark = AccountingMark.objects.order_by("pk").values_list("sampled_at", flat=True).first()
    since = max(start, first) if first is not None else start
    until = min(now, mark) if mark is not None else now
    return Coverage(since=since, until=max(since, until))


def _hour(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def rows(hours: int, group_by: str, covered: Coverage | None = None) -> list[Row]:
    """One row per hour and key with anything in it, by hour then key. The current hour's
    running jobs are averaged over its minutes sampled so far."""
    covered = covered or coverage(hours)
    now = covered.until
    current = _hour(clock.now())
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


def job_hours(r: Row, covered: Coverage) -> float:
    """The row's running jobs times the time they were sampled over (its hour, or the part of
    the current hour sampled so far)."""
    return r.running * min(1.0, max(1 / 60, covered.hours_within(r.hour, r.hour + HOUR)))


def totals(found: list[Row], covered: Coverage) -> list[Total]:
    """Per key over the window, the busiest first; the running jobs averaged over the time the
    data covers."""
    by_key: dict[str, Total] = {}
    span = max(covered.hours, 1 / 60)
    for r in found:
        t = by_key.setdefault(r.key, Total(r.key, 0.0, 0, 0, 0.0, 0.0))
        t.running += job_hours(r, covered) / span
        t.finished += r.finished
        t.failed += r.failed
        t.cpu_hours += r.cpu_hours
        t.wall_hours += r.wall_hours
    return sorted(by_key.values(), key=lambda t: (-t.running, -t.finished, t.key))
