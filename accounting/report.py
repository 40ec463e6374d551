"""What the accounting page and API show: per hour and per key of a grouping (group, user,
site, CE) over a window, from the hourly bins summed per key (never the jobs)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import BigIntegerField, Func, Min, Sum

from accounting.models import AccountingBin, AccountingMark, AccountingSum
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
class Cell:
    """A day's figures for one key (`daily`): its job-hours (running jobs times the time they
    were sampled over) rather than an hour's average."""

    hour: datetime  # the day's start (UTC), where the charts bucket it
    key: str
    job_hours: float
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
    running jobs are averaged over its minutes sampled so far. Read from the bins summed per
    hour and key of the grouping (AccountingSum: a row per key and hour, not one per bin)."""
    covered = covered or coverage(hours)
    return _rows_from(_start(hours), group_by, covered)


def _start(hours: int) -> datetime:
    return _hour(clock.now()) - timedelta(hours=hours - 1)


class _Epoch(Func):
    """A time as whole seconds since the epoch: an integer to read where thousands of
    timestamps would each be parsed from text (most of a month's reading time); `_Times` makes
    datetimes of them again, one per distinct hour or day."""

    template = "EXTRACT(EPOCH FROM %(expressions)s)::bigint"
    output_field = BigIntegerField()


class _EpochDay(_Epoch):
    """The start of the time's day (UTC), as seconds since the epoch."""

    template = "EXTRACT(EPOCH FROM DATE_TRUNC('day', %(expressions)s AT TIME ZONE 'UTC'))::bigint"


class _Times(dict):
    """Seconds since the epoch -> the time (UTC), made once each."""

    def __missing__(self, seconds: int) -> datetime:
        at = self[seconds] = datetime.fromtimestamp(seconds, UTC)
        return at


def _rows_from(start: datetime, group_by: str, covered: Coverage) -> list[Row]:
    now = covered.until
    current = _hour(clock.now())
    key = GROUPINGS[group_by]
    sums = (
        AccountingSum.objects.filter(grouping=group_by, hour__gte=start)
        .order_by("hour", key)
        .values_list(_Epoch("hour"), key, "running_minutes", "finished", "failed",
                     "cpu_seconds", "wall_seconds")
    )  # fmt: skip
    elapsed = min(60.0, max(1.0, (now - current).total_seconds() / 60))
    times = _Times()
    return [
        Row(
            hour=(hour := times[seconds]),
            key=name or NONE,
            running=rm / (elapsed if hour == current else 60.0),
            finished=fin,
            failed=fail,
            cpu_hours=cpu / 3600,
            wall_hours=wall / 3600,
        )
        for seconds, name, rm, fin, fail, cpu, wall in sums
    ]


def daily(hours: int, group_by: str, covered: Coverage) -> list[Cell]:
    """What `rows` gives, summed per day (UTC) and key, by day then key: the same totals and
    daily figures from a row per day and key instead of one per hour. The hours before the one
    the data ends in are summed by the database (each ran its minutes / 60 job-hours); that
    hour and any after it (the current one, partly sampled) are read per hour and counted as
    `job_hours` counts them."""
    start, edge = _start(hours), _hour(covered.until)
    key = GROUPINGS[group_by]
    sums = (
        AccountingSum.objects.filter(grouping=group_by, hour__gte=start, hour__lt=edge)
        .annotate(day=_EpochDay("hour"))
        .values("day", key)
        .annotate(
            rm=Sum("running_minutes"),
            fin=Sum("finished"),
            fail=Sum("failed"),
            cpu=Sum("cpu_seconds"),
            wall=Sum("wall_seconds"),
        )
        .order_by()  # sorted below: a hash aggregate, no sort of every hour
        .values_list("day", key, "rm", "fin", "fail", "cpu", "wall")
    )
    days = _Times()
    cells = {
        (days[day], name or NONE): Cell(
            days[day], name or NONE, rm / 60, fin, fail, cpu / 3600, wall / 3600
        )
        for day, name, rm, fin, fail, cpu, wall in sums
    }
    for r in _rows_from(max(start, edge), group_by, covered):
        day = r.hour.replace(hour=0)
        c = cells.setdefault((day, r.key), Cell(day, r.key, 0.0, 0, 0, 0.0, 0.0))
        c.job_hours += job_hours(r, covered)
        c.finished += r.finished
        c.failed += r.failed
        c.cpu_hours += r.cpu_hours
        c.wall_hours += r.wall_hours
    return [cells[k] for k in sorted(cells)]


def job_hours(r: Row | Cell, covered: Coverage) -> float:
    """The row's running jobs times the time they were sampled over (its hour, or the part of
    the current hour sampled so far); a day's Cell holds its own."""
    if isinstance(r, Cell):
        return r.job_hours
    return r.running * min(1.0, max(1 / 60, covered.hours_within(r.hour, r.hour + HOUR)))


def totals(found: list[Row] | list[Cell], covered: Coverage) -> list[Total]:
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
