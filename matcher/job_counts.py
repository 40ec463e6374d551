"""How many jobs, as the summaries ask: read from the rollups the mover keeps
(matcher/services/rollups.py), never counted over the job table: a few thousand total rows and
the deltas not folded yet, whatever the number of jobs (docs/developer-guide.md, How jobs are
counted). Each answer is one statement, so it sees totals and deltas of one moment: every
committed move once, folded or not. Who sees what is Job.objects.visible_to's rule: staff
every job, a user its own and those of its JobSharing groups."""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from matcher.models import JobCount, JobCountDelta, JobHourCount

KEYS = ("owner_id", "owner_group_id", "site", "status")

_CURRENT = f"""
    SELECT owner_id, owner_group_id, site, status, jobs AS n FROM {JobCount._meta.db_table}
    UNION ALL
    SELECT owner_id, owner_group_id, from_site, from_status, -n FROM {JobCountDelta._meta.db_table}
    WHERE from_status <> ''
    UNION ALL
    SELECT owner_id, owner_group_id, to_site, to_status, n FROM {JobCountDelta._meta.db_table}
    WHERE to_status <> ''
"""


def _visible(user, where: list[str], params: list) -> None:
    if user is not None and not user.is_staff:
        where.append("(owner_id = %s OR owner_group_id = ANY(%s))")
        params += [user.pk, user.visible_group_ids()]


def counts(user, by: tuple[str, ...] = ("site", "status"), **equal) -> dict[tuple, int]:
    """{values of `by` (KEYS): jobs} the user may see (None: every job), of those whose KEYS
    named in `equal` have these values; keys with no job are absent."""
    for name in (*by, *equal):
        if name not in KEYS:
            raise ValueError(f"jobs are counted by {KEYS}, not {name}")
    where, params = [], []
    _visible(user, where, params)
    for name, value in equal.items():
        where.append(f"{name} = %s")
        params.append(value)
    cols = ", ".join(by)
    sql = (
        f"SELECT {cols}, sum(n) FROM ({_CURRENT}) c "
        f"{'WHERE ' + ' AND '.join(where) if where else ''} "
        f"GROUP BY {cols} HAVING sum(n) <> 0"
    )
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return {tuple(row[:-1]): int(row[-1]) for row in cur.fetchall()}


def by_status(user, **equal) -> dict[str, int]:
    """{state: jobs} the user may see, of those matching `equal` (see `counts`)."""
    return {status: n for (status,), n in counts(user, ("status",), **equal).items()}


def entered_per_hour(
    user, since: datetime, until: datetime | None = None, status: str | None = None
) -> dict[tuple[datetime, str, str], int]:
    """{(hour, site, state): jobs that entered the state at the site in that hour (UTC)} for
    the hours from the one holding `since` to `until`, the jobs the user may see; folded and
    not yet folded moves alike (a job created counts as entering its first state)."""
    deltas = JobCountDelta._meta.db_table
    hour = "date_trunc('hour', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
    first = "date_trunc('hour', %s::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
    where, params = [f"hour >= {first}"], [since]
    if until is not None:
        where.append("hour <= %s")
        params.append(until)
    if status is not None:
        where.append("status = %s")
        params.append(status)
    _visible(user, where, params)
    sql = f"""
        SELECT hour, site, status, sum(jobs) FROM (
            SELECT hour, owner_id, owner_group_id, site, status, jobs
            FROM {JobHourCount._meta.db_table}
            UNION ALL
            SELECT {hour}, owner_id, owner_group_id, to_site, to_status, n FROM {deltas}
            WHERE to_status <> '' AND to_status <> from_status
        ) h WHERE {" AND ".join(where)} GROUP BY 1, 2, 3 HAVING sum(jobs) <> 0
    """
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return {(h, site, st): int(n) for h, site, st, n in cur.fetchall()}
