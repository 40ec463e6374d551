"""Failed jobs counted as they fail (the error summary's rollup, read by matcher/failed_counts.py):
the jobs now in `failed`, by the hour and the day they entered it (their status_changed), per
group, owner, site, error code and category, reason and task.

The mover reads the keys of the jobs it takes out of `failed` before it moves them, and of
those it puts in after, and appends a FailedJobDelta row per job (+1 in, -1 out), in the
transaction of the move: only moves into or out of `failed` (and deletions of failed jobs)
pay for it, one SELECT by id each. `fold` (run by rollups.fold, in its transaction) moves them
into FailedJobCount, eight rows per job: kinds "g" (a group's jobs per keys), "t" (a group's
total), "o" (an owner's jobs per keys), "u" (an owner's total), each per hour and per day. A
row's `first_job` is the lowest id among its jobs; when that job leaves, it is looked up again
among the bucket's failed jobs in the job table (one bucket: an hour or a day of failures).
`rebuild` recounts from the job table. Each move records here before the job counts
(rollups.py), the fold folds here first and `rebuild` locks these first; a transaction that
moves several jobs takes the two in turn, and `rebuild` runs again when it deadlocks with one.

Size: a row per distinct keys per bucket and kind, never more than the failed jobs (times the
eight kinds and spans); the summary reads at most a month of it. Reasons are grouped by their
text, as the page shows and links them: the pilots' error codes give a few reasons each, but a
reason that names its job (a pilot's free text) makes a "g" and an "o" row per job, and the
summary then reads as many rows as such jobs. Not bounded here: a cap of reasons per bucket
(the rest as one "other reasons" row) needs the removal of a job to find the row its entry
was counted in."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from core import db
from matcher.lifecycle import FAILED
from matcher.models import FailedJobCount, FailedJobDelta, Job

COUNTS = FailedJobCount._meta.db_table
DELTAS = FailedJobDelta._meta.db_table
JOBS = Job._meta.db_table
# The task of a job: brokerage's TaskJob, by its job id (matcher sits below brokerage: the
# table is named through the relation, not imported).
TASK_JOBS = Job._meta.get_field("task_job").related_model._meta.db_table

KEY_COLUMNS = (
    "changed",
    "owner_id",
    "owner_group_id",
    "site",
    "error_code",
    "error_category",
    "reason",
    "task_id",
)
DELTA_COLUMNS = ("job_id", "n", *KEY_COLUMNS)
DELTA_TYPES = (
    "bigint",
    "smallint",
    "timestamptz",
    "bigint",
    "bigint",
    "text",
    "integer",
    "text",
    "text",
    "bigint",
)
COUNT_KEYS = (
    "kind",
    "span",
    "start",
    "owner_id",
    "owner_group_id",
    "site",
    "error_code",
    "error_category",
    "reason",
    "task_id",
)

# The keys of failed jobs among some ids: (job id, *KEY_COLUMNS).
_KEYS_SQL = f"""
SELECT j.id, j.status_changed, j.owner_id, j.owner_group_id, j.site, j.error_code,
    j.error_category, j.status_reason, coalesce(t.task_id, 0)
FROM {JOBS} j LEFT JOIN {TASK_JOBS} t ON t.job_id = j.id
WHERE j.id = ANY(%s) AND j.status = %s
"""


def keys(ids: Iterable[int]) -> dict[int, tuple]:
    """{job id: KEY_COLUMNS} of those of these jobs that are failed now."""
    ids = sorted(set(ids))
    if not ids:
        return {}
    with connection.cursor() as cur:
        cur.execute(_KEYS_SQL, [ids, FAILED])
        return {row[0]: tuple(row[1:]) for row in cur.fetchall()}


def record(before: dict[int, tuple], after: dict[int, tuple]) -> None:
    """Deltas of the jobs whose failed keys went from `before` to `after` (`keys` before and
    after the move, in its transaction): -1 for each job that left or changed, +1 for each
    that came or changed."""
    rows = []
    for job_id in sorted(before.keys() | after.keys()):
        was, now = before.get(job_id), after.get(job_id)
        if was == now:
            continue
        if was is not None:
            rows.append((job_id, -1, *was))
        if now is not None:
            rows.append((job_id, 1, *now))
    if rows:
        with connection.cursor() as cur:
            db.bulk_insert(cur, DELTAS, DELTA_COLUMNS, rows, pg_types=DELTA_TYPES)


# --- folding -------------------------------------------------------------------------------------

# A job's rows: per kind and span, its keys (blank where the kind does not keep them).
_EXPLODE = """
SELECT k.kind, s.span,
    (CASE s.span WHEN 1 THEN date_trunc('hour', x.changed AT TIME ZONE 'UTC')
     ELSE date_trunc('day', x.changed AT TIME ZONE 'UTC') END) AT TIME ZONE 'UTC' AS start,
    CASE WHEN k.kind IN ('g', 't') THEN 0 ELSE x.owner_id END AS owner_id,
    x.owner_group_id,
    CASE WHEN k.kind IN ('g', 'o') THEN x.site ELSE '' END AS site,
    CASE WHEN k.kind IN ('g', 'o') THEN x.error_code END AS error_code,
    CASE WHEN k.kind IN ('g', 'o') THEN x.error_category ELSE '' END AS error_category,
    CASE WHEN k.kind IN ('g', 'o') THEN x.reason ELSE '' END AS reason,
    CASE WHEN k.kind IN ('g', 'o') THEN x.task_id ELSE 0 END AS task_id,
    x.n, x.job_id
FROM {source} x
CROSS JOIN (VALUES ('g'), ('t'), ('o'), ('u')) k(kind)
CROSS JOIN (VALUES (1), (24)) s(span)
"""
_KEYS = ", ".join(COUNT_KEYS)
_CONFLICT = (
    f"ON CONFLICT ({_KEYS}) DO UPDATE SET jobs = {COUNTS}.jobs + excluded.jobs, "
    f"first_job = least({COUNTS}.first_job, excluded.first_job)"
)

# One statement: take (delete) a batch of the oldest deltas, add their net per row (keys in
# one order), and return the rows whose jobs left with the ids that left.
_FOLD_SQL = f"""
WITH gone AS (
    DELETE FROM {DELTAS} WHERE id IN (SELECT id FROM {DELTAS} ORDER BY id LIMIT %(limit)s)
    RETURNING {", ".join(DELTA_COLUMNS)}
), exploded AS ({_EXPLODE.format(source="gone")}
), net AS (
    SELECT {_KEYS}, sum(n) AS n, min(job_id) FILTER (WHERE n > 0) AS first_job
    FROM exploded GROUP BY {_KEYS}
), written AS (
    INSERT INTO {COUNTS} ({_KEYS}, jobs, first_job)
    SELECT {_KEYS}, n, first_job FROM net ORDER BY {_KEYS}
    {_CONFLICT}
)
SELECT {_KEYS}, job_id FROM exploded WHERE n < 0
UNION ALL  -- last: the number of deltas folded, as a row of no keys
SELECT {", ".join(["NULL"] * len(COUNT_KEYS))}, count(*) FROM gone
"""

# The lowest id among a row's jobs, from the job table (one bucket of failures), for the rows
# whose lowest left: (row keys..., the id that left) as arrays.
_FIRST_SQL = f"""
UPDATE {COUNTS} c SET first_job = (
    SELECT min(j.id) FROM {JOBS} j LEFT JOIN {TASK_JOBS} t ON t.job_id = j.id
    WHERE j.status = %(failed)s AND j.status_changed >= c.start
        AND j.status_changed < c.start + c.span * interval '1 hour'
        AND j.owner_group_id = c.owner_group_id
        AND (c.owner_id = 0 OR j.owner_id = c.owner_id)
        AND (c.kind IN ('t', 'u') OR (
            j.site = c.site AND j.error_code IS NOT DISTINCT FROM c.error_code
            AND j.error_category = c.error_category AND j.status_reason = c.reason
            AND coalesce(t.task_id, 0) = c.task_id))
)
FROM unnest(%(kind)s::text[], %(span)s::smallint[], %(start)s::timestamptz[],
    %(owner)s::bigint[], %(group)s::bigint[], %(site)s::text[], %(code)s::integer[],
    %(category)s::text[], %(reason)s::text[], %(task)s::bigint[], %(left)s::bigint[])
    AS v(kind, span, start, owner_id, owner_group_id, site, error_code, error_category,
        reason, task_id, job_id)
WHERE c.kind = v.kind AND c.span = v.span AND c.start = v.start AND c.owner_id = v.owner_id
    AND c.owner_group_id = v.owner_group_id AND c.site = v.site
    AND c.error_code IS NOT DISTINCT FROM v.error_code AND c.error_category = v.error_category
    AND c.reason = v.reason AND c.task_id = v.task_id AND c.first_job = v.job_id
"""


def fold(cur, limit: int) -> int:
    """Fold up to `limit` deltas (in rollups.fold's transaction, under its lock); returns the
    number folded."""
    cur.execute(_FOLD_SQL, {"limit": limit})
    *left, (*_none, folded) = cur.fetchall()
    if left:
        names = ("kind", "span", "start", "owner", "group", "site", "code", "category")
        columns = map(list, zip(*left, strict=True))
        params = dict(zip((*names, "reason", "task", "left"), columns, strict=True))
        cur.execute(_FIRST_SQL, {**params, "failed": FAILED})
    if folded:
        cur.execute(f"DELETE FROM {COUNTS} WHERE jobs <= 0")
    return folded


def pending(cur) -> int:
    cur.execute(f"SELECT count(*) FROM {DELTAS}")
    return cur.fetchone()[0]


_FAILED_JOBS = f"""(
    SELECT j.id AS job_id, 1 AS n, j.status_changed AS changed, j.owner_id, j.owner_group_id,
        j.site, j.error_code, j.error_category, j.status_reason AS reason,
        coalesce(t.task_id, 0) AS task_id
    FROM {JOBS} j LEFT JOIN {TASK_JOBS} t ON t.job_id = j.id
    WHERE j.status = '{FAILED}'
)"""
REBUILD_SQL = f"""
INSERT INTO {COUNTS} ({_KEYS}, jobs, first_job)
SELECT {_KEYS}, count(*), min(job_id) FROM ({_EXPLODE.format(source=_FAILED_JOBS)}) e
GROUP BY {_KEYS}
"""


def rebuild(cur) -> dict:
    """Recount from the job table (in rollups.rebuild's transaction, which locked the tables)."""
    dropped = pending(cur)
    cur.execute(f"DELETE FROM {DELTAS}")
    cur.execute(f"DELETE FROM {COUNTS}")
    cur.execute(REBUILD_SQL)
    cur.execute(f"SELECT count(*) FROM {COUNTS}")
    return {"failed_rows": cur.fetchone()[0], "failed_deltas_dropped": dropped}
