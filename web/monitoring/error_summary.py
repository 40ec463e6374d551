"""Failed jobs over a time window (BigPanDA's /errors/): the jobs the user may see that entered
`failed` within the last `hours` (Job.status_changed, the time of their last move, on the
grid's clock as the jobs list's time range), grouped by error code and by error category
(matcher.errors: PanDA's pilot error codes), by reason (status_reason, DIRAC's minor status), by
site, by task and by user, counted per site and category (the site x error view), and per time
bucket for the histogram. Eight GROUP BY queries."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.db.models import CharField, Count, F, Min, Value
from django.db.models.functions import Cast, Concat, Trunc

from core import clock
from matcher import errors
from matcher.models import Job, JobStatus
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


def failed_jobs(user, since: datetime.datetime):
    return (
        Job.objects.visible_to(user)
        .filter(status=JobStatus.FAILED, status_changed__gte=since)
        .order_by()
    )


def _grouped(qs, path: str) -> list[tuple[str, int, int]]:
    """(value as text, '' for none; count; lowest job id), the TOP largest: one GROUP BY.
    Grouped by the value as an expression, not the bare column, so that the planner reads the
    failed jobs only rather than walking the whole (column, id) index the jobs list sorts by."""
    key = Concat(Cast(F(path), CharField()), Value(""), output_field=CharField())
    rows = qs.annotate(key=key).values_list("key").annotate(n=Count("*"), first=Min("id"))
    return list(rows.order_by("-n", "key")[:TOP])


def summary(user, hours: int) -> ErrorSummary:
    until = clock.now()
    since = until - datetime.timedelta(hours=hours)
    qs = failed_jobs(user, since)
    out = ErrorSummary(hours=hours, since=since, until=until, bucket=bucket_for(hours))
    base = {"status": JobStatus.FAILED.value, "since": links.instant(since)}
    out.url = links.jobs(**base)
    out.histogram = [
        (at, n)
        for at, n in qs.annotate(at=Trunc("status_changed", out.bucket))
        .values_list("at")
        .annotate(n=Count("*"))
        .order_by("at")
    ]
    out.total = sum(n for _at, n in out.histogram)
    out.by_code = [
        Group(
            "" if code is None else str(code),
            _code_label(code, category),
            n,
            first,
            f"/jobs/{first}/" if code is None else links.jobs(**base, error_code=code),
        )
        for code, category, n, first in qs.values_list("error_code", "error_category")
        .annotate(n=Count("*"), first=Min("id"))
        .order_by("-n", "error_code")[:TOP]
    ]
    out.by_category = [
        Group(
            category,
            category or NO_CATEGORY,
            n,
            first,
            links.jobs(**base, error_category=category) if category else f"/jobs/{first}/",
        )
        for category, n, first in _grouped(qs, "error_category")
    ]
    out.matrix = site_matrix(qs, base)
    out.by_reason = [
        Group(
            reason,
            reason or "(no reason given)",
            n,
            first,
            links.jobs(**base, reason=reason) if reason else f"/jobs/{first}/",
        )
        for reason, n, first in _grouped(qs, "status_reason")
    ]
    out.by_site = [
        Group(
            site, site or NOT_PLACED, n, first, links.jobs(**base, placed=site or links.NOT_PLACED)
        )
        for site, n, first in _grouped(qs, "site")
    ]
    out.by_task = [
        Group(
            task,
            f"task {task}" if task else "no task",
            n,
            first,
            links.jobs(**base, task=task) if task else f"/jobs/{first}/",
        )
        for task, n, first in _grouped(qs, "task_job__task_id")
    ]
    out.by_user = [
        Group(name, name, n, first, links.jobs(**base, owner=name))
        for name, n, first in _grouped(qs, "owner__username")
    ]
    return out


def _code_label(code: int | None, category: str) -> str:
    if code is None:
        return NO_CATEGORY
    return f"{code} {errors.describe(code).diag} ({category or errors.describe(code).category})"


def _column_order(category: str) -> tuple[int, str]:
    known = errors.CATEGORIES
    return (known.index(category) if category in known else len(known), category or "~")


def site_matrix(qs, base: dict) -> SiteMatrix:
    """The site x error category counts of the failed jobs `qs`: one GROUP BY."""
    counts: dict[str, dict[str, int]] = {}
    for site, category, n in (
        qs.values_list("site", "error_category").annotate(n=Count("*")).order_by()
    ):
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
