"""The failed jobs of a window, as the error summary groups them: read from the rollup the mover
keeps (matcher/services/failures.py), not from the job table, in one statement (rollup rows and
the deltas not folded yet of one moment).

A window [since, now] is read as whole days (the day rows) between two runs of whole hours (the
hour rows), the deltas not folded yet of those hours, and the part of an hour before the first
whole hour from the job table (its failed jobs by (status, status_changed)). So the rows read
are the buckets of the window times the keys failing in each, and at most an hour of failed
jobs, whatever the number of failed jobs in the window. A window of `EXACT_HOURS` or less (the
summary bins it by the minute) is read from the job table alone. Who sees what is
Job.objects.visible_to's rule, as in matcher/job_counts.py."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db import connection

from matcher.lifecycle import FAILED
from matcher.models import FailedJobCount, FailedJobDelta, Job

COUNTS = FailedJobCount._meta.db_table
DELTAS = FailedJobDelta._meta.db_table
JOBS = Job._meta.db_table
TASK_JOBS = Job._meta.get_field("task_job").related_model._meta.db_table
EXACT_HOURS = 3
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)

# Per group of the summary: {key: [jobs, lowest job id]}.
GROUPINGS = ("code", "category", "site_category", "reason", "site", "task", "owner")


@dataclass
class Failed:
    groups: dict[str, dict[tuple, list]] = field(
        default_factory=lambda: {name: {} for name in GROUPINGS}
    )
    # (a bucket's start, or a job's own time; jobs): to be binned by the reader
    times: list[tuple[datetime.datetime, int]] = field(default_factory=list)
    rows_read: int = 0

    def add(self, name: str, key: tuple, n: int, first: int | None) -> None:
        cell = self.groups[name].setdefault(key, [0, None])
        cell[0] += n
        if first is not None and n > 0 and (cell[1] is None or first < cell[1]):
            cell[1] = first

    def add_keys(self, site, code, category, reason, task, n, first) -> None:
        self.add("code", (code, category), n, first)
        self.add("category", (category,), n, first)
        self.add("site_category", (site, category), n, first)
        self.add("reason", (reason,), n, first)
        self.add("site", (site,), n, first)
        self.add("task", (task,), n, first)

    def grouped(self, name: str) -> Iterator[tuple[tuple, int, int | None]]:
        """(key, jobs, lowest job id) of the keys with jobs."""
        for key, (n, first) in self.groups[name].items():
            if n > 0:
                yield key, n, first


def _ceil(at: datetime.datetime, step: datetime.timedelta) -> datetime.datetime:
    epoch = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
    rest = (at - epoch) % step
    return at if not rest else at + (step - rest)


def _floor(at: datetime.datetime, step: datetime.timedelta) -> datetime.datetime:
    epoch = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
    return at - (at - epoch) % step


_COLUMNS = "owner_id, owner_group_id, site, error_code, error_category, reason, task_id"

Kinds = list[tuple[str, str, list]]  # (kind, visibility clause, its parameters)


def _spans(first_hour: datetime.datetime, days: tuple | None) -> tuple[str, list]:
    """The buckets from the first whole hour on: the whole `days` (first, end) as day rows, the
    hours before and after them as hour rows (each a range of the rollup's key); without
    days, hour rows only."""
    if days is None:
        return "span = 1 AND start >= %s", [first_hour]
    first_day, end = days
    return (
        "((span = 24 AND start >= %s AND start < %s) OR "
        "(span = 1 AND start >= %s AND start < %s) OR (span = 1 AND start >= %s))",
        [first_day, end, first_hour, first_day, end],
    )


def _rollup(src: str, kinds: Kinds, spans: tuple[str, list], params: list) -> list[str]:
    """SELECTs of the rollup rows of `kinds` in `spans`, labelled `src`."""
    parts = []
    for kind, visible, visible_params in kinds:
        parts.append(
            f"SELECT '{src}' AS src, start AS at, {_COLUMNS}, jobs AS n, first_job "
            f"FROM {COUNTS} WHERE kind = %s AND {visible} AND {spans[0]}"
        )
        params += [kind, *visible_params, *spans[1]]
    return parts


def failed(user, since: datetime.datetime, until: datetime.datetime, bucket_hours: int) -> Failed:
    """The failed jobs the user may see that entered `failed` at or after `since` (`until`:
    now), grouped (see Failed), with their times for a histogram in buckets of `bucket_hours`
    (1 or 24; 0: by the minute, all from the job table)."""
    staff = user.is_staff
    groups = [] if staff else list(user.visible_group_ids())

    def visible_jobs(alias: str) -> tuple[str, list]:
        if staff:
            return "TRUE", []
        return f"({alias}owner_id = %s OR {alias}owner_group_id = ANY(%s))", [user.pk, groups]

    def by_kind(group_kind: str, own_kind: str) -> Kinds:
        """A group's rows for the groups the user sees whole, its own beyond them."""
        if staff:
            return [(group_kind, "TRUE", [])]
        return [
            (group_kind, "owner_group_id = ANY(%s)", [groups]),
            (own_kind, "owner_id = %s AND NOT owner_group_id = ANY(%s)", [user.pk, groups]),
        ]

    exact = bucket_hours == 0
    first_hour = _ceil(since, HOUR)
    params: list = []
    # The jobs themselves: the window before its first whole hour (all of it when exact).
    visible, visible_params = visible_jobs("j.")
    # (By the minute and keys: a burst of like failures is a few rows.)
    parts = [
        f"SELECT 'j' AS src, date_trunc('minute', j.status_changed) AS at, j.owner_id, "
        f"j.owner_group_id, j.site, j.error_code, j.error_category, j.status_reason, "
        f"coalesce(t.task_id, 0), count(*), min(j.id) "
        f"FROM {JOBS} j LEFT JOIN {TASK_JOBS} t ON t.job_id = j.id "
        f"WHERE j.status = %s AND j.status_changed >= %s "
        f"{'' if exact else 'AND j.status_changed < %s'} AND {visible} "
        f"GROUP BY 2, 3, 4, 5, 6, 7, 8, 9"
    ]
    params += [FAILED, since, *([] if exact else [first_hour]), *visible_params]
    if not exact:
        first_day, end = _ceil(first_hour, DAY), _floor(until, DAY)
        days = (first_day, end) if first_day < end else None
        # The deltas not folded yet, from the first whole hour.
        visible, visible_params = visible_jobs("")
        parts.append(
            f"SELECT 'j', changed, {_COLUMNS}, n, job_id FROM {DELTAS} "
            f"WHERE changed >= %s AND {visible}"
        )
        params += [first_hour, *visible_params]
        spans = _spans(first_hour, days)
        parts += _rollup("d", by_kind("g", "o"), spans, params)
        if staff:
            owners: Kinds = [("u", "TRUE", [])]
        else:
            owners = [("u", "(owner_group_id = ANY(%s) OR owner_id = %s)", [groups, user.pk])]
        parts += _rollup("u", owners, spans, params)
        hours = _spans(first_hour, None if bucket_hours == 1 else days)
        parts += _rollup("h", by_kind("t", "u"), hours, params)
    with connection.cursor() as cur:
        cur.execute(" UNION ALL ".join(parts), params)
        rows = cur.fetchall()
    out = Failed(rows_read=len(rows))
    for src, at, owner, _group, site, code, category, reason, task, n, first in rows:
        if src in ("d", "j"):
            out.add_keys(site, code, category, reason, task, n, first)
        if src in ("u", "j"):
            out.add("owner", (owner,), n, first)
        if src in ("h", "j"):
            out.times.append((at, n))
    return out
