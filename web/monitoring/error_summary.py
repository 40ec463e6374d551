"""Failed jobs over a time window (BigPanDA's /errors/): the jobs the user may see that entered
`failed` within the last `hours` (Job.status_changed, the time of their last move, on the
grid's clock as the jobs list's time range), grouped by error code and by error category
(matcher.errors: PanDA's pilot error codes), by reason (status_reason, DIRAC's minor status), by
site, by task and by user, counted per site and category (the site x error view), and per time
bucket for the histogram. Read from the failed jobs' rollup (matcher.failed_counts, one
statement: the window's hour and day buckets, and the failed jobs of the part of an hour before
the first whole one), not from the job table."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from core import clock
from matcher import errors, failed_counts
from matcher.models import JobStatus
from shares.models import User
from web.monitoring import links

DEFAULT_HOURS = 24
MAX_HOURS = 24 * 31
WINDOWS = (1, 24, 168)  # the page's buttons: last hour, day, week
TOP = 20  # rows per grouping, the largest first
NOT_PLACED = "not placed"
NO_CATEGORY = "no error code"


class BadWindow(ValueError):
    """`hours` is not a whole number of hours from 1 to MAX_HOURS."""


def parse_hours(raw: str | None) -> int:
    if raw is None or raw == "":
        return DEFAULT_HOURS
    text = raw.strip()
    # ASCII digits only: "²" is a digit to str.isdigit() but not to int()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_HOURS:
        raise BadWindow(
            f"hours must be a whole number of hours from 1 to {MAX_HOURS}, not {raw[:40]!r}"
        )
    return int(text)


@dataclass
class Group:
    key: str  # the reason, site, task id or user name ('' when none)
    label: str
    count: int
    example_job: int
    url: str  # the filtered jobs list, or the example job when the list cannot filter by it


@dataclass
class MatrixRow:
    site: str  # '' for jobs at no site
    label: str
    url: str
    cells: list[int]  # per column of SiteMatrix.categories
    total: int


@dataclass
class SiteMatrix:
    """Failed jobs per site (rows, the TOP largest) and error category (columns): which
    sites fail how."""

    categories: list[str]  # the columns: categories present, in errors.CATEGORIES order
    rows: list[MatrixRow]
    totals: list[int]  # per column, over the rows shown
    total: int


@dataclass
class ErrorSummary:
    hours: int
    since: datetime.datetime
    until: datetime.datetime
    total: int = 0
    url: str = ""
    by_code: list[Group] = field(default_factory=list)
    by_category: list[Group] = field(default_factory=list)
    matrix: SiteMatrix | None = None
    by_reason: list[Group] = field(default_factory=list)
    by_site: list[Group] = field(default_factory=list)
    by_task: list[Group] = field(default_factory=list)
    by_user: list[Group] = field(default_factory=list)
    bucket: str = "hour"  # the histogram's bin: minute, hour or day
    histogram: list[tuple[datetime.datetime, int]] = field(default_factory=list)


def bucket_for(hours: int) -> str:
    return "minute" if hours <= 3 else "hour" if hours <= 24 * 7 else "day"


BUCKET_HOURS = {"minute": 0, "hour": 1, "day": 24}


def _truncate(at: datetime.datetime, bucket: str) -> datetime.datetime:
    at = at.astimezone(datetime.UTC).replace(second=0, microsecond=0)
    if bucket == "minute":
        return at
    at = at.replace(minute=0)
    return at if bucket == "hour" else at.replace(hour=0)


def _top(rows, order) -> list:
    """The TOP rows of (key, jobs, lowest job id), the largest first, then by `order`(key)."""
    return sorted(rows, key=lambda row: (-row[1], order(row[0])))[:TOP]


def _text(value) -> str:
    return "" if value is None else str(value)


def summary(user, hours: int) -> ErrorSummary:
    until = clock.now()
    since = until - datetime.timedelta(hours=hours)
    out = ErrorSummary(hours=hours, since=since, until=until, bucket=bucket_for(hours))
    found = failed_counts.failed(user, since, until, BUCKET_HOURS[out.bucket])
    base = {"status": JobStatus.FAILED.value, "since": links.instant(since)}
    out.url = links.jobs(**base)
    bins: dict[datetime.datetime, int] = {}
    for at, n in found.times:
        at = _truncate(at, out.bucket)
        bins[at] = bins.get(at, 0) + n
    out.histogram = [(at, n) for at, n in sorted(bins.items()) if n > 0]
    out.total = sum(n for _at, n in out.histogram)
    codes = _top(
        found.grouped("code"),
        lambda key: (key[0] is None, key[0] or 0, key[1]),  # no code last, as PostgreSQL
    )
    out.by_code = [
        Group(
            _text(code),
            _code_label(code, category),
            n,
            first,
            f"/jobs/{first}/" if code is None else links.jobs(**base, error_code=code),
        )
        for (code, category), n, first in codes
    ]
    out.by_category = [
        Group(
            category,
            category or NO_CATEGORY,
            n,
            first,
            links.jobs(**base, error_category=category) if category else f"/jobs/{first}/",
        )
        for (category,), n, first in _top(found.grouped("category"), _text)
    ]
    out.matrix = site_matrix(found, base)
    out.by_reason = [
        Group(
            reason,
            reason or "(no reason given)",
            n,
            first,
            links.jobs(**base, reason=reason) if reason else f"/jobs/{first}/",
        )
        for (reason,), n, first in _top(found.grouped("reason"), _text)
    ]
    out.by_site = [
        Group(
            site, site or NOT_PLACED, n, first, links.jobs(**base, placed=site or links.NOT_PLACED)
        )
        for (site,), n, first in _top(found.grouped("site"), _text)
    ]
    tasks = (((_text(task or None),), n, first) for (task,), n, first in found.grouped("task"))
    out.by_task = [
        Group(
            task,
            f"task {task}" if task else "no task",
            n,
            first,
            links.jobs(**base, task=task) if task else f"/jobs/{first}/",
        )
        for (task,), n, first in _top(tasks, lambda key: key[0])
    ]
    owners = list(found.grouped("owner"))
    names = dict(
        User.objects.filter(pk__in=[o for (o,), _n, _f in owners]).values_list("pk", "username")
    )
    users = ((names.get(owner, str(owner)), n, first) for (owner,), n, first in owners)
    out.by_user = [
        Group(name, name, n, first, links.jobs(**base, owner=name))
        for name, n, first in _top(users, lambda name: name)
    ]
    return out


def _code_label(code: int | None, category: str) -> str:
    if code is None:
        return NO_CATEGORY
    return f"{code} {errors.describe(code).diag} ({category or errors.describe(code).category})"


def _column_order(category: str) -> tuple[int, str]:
    known = errors.CATEGORIES
    return (known.index(category) if category in known else len(known), category or "~")


def site_matrix(found: failed_counts.Failed, base: dict) -> SiteMatrix:
    """The site x error category counts of the failed jobs `found`."""
    counts: dict[str, dict[str, int]] = {}
    for (site, category), n, _first in found.grouped("site_category"):
        counts.setdefault(site, {})[category] = n
    columns = sorted({c for per_site in counts.values() for c in per_site}, key=_column_order)
    sites = sorted(counts, key=lambda site: (-sum(counts[site].values()), site))[:TOP]
    rows = [
        MatrixRow(
            site,
            site or NOT_PLACED,
            links.jobs(**base, placed=site or links.NOT_PLACED),
            [counts[site].get(c, 0) for c in columns],
            sum(counts[site].values()),
        )
        for site in sites
    ]
    totals = [sum(r.cells[i] for r in rows) for i in range(len(columns))]
    return SiteMatrix([c or NO_CATEGORY for c in columns], rows, totals, sum(r.total for r in rows))
