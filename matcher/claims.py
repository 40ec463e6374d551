"""Claiming one job of a TaskQueue for a pilot: the user-priority draw and the claim.

Inside the drawn TaskQueue the winning UserPriority is drawn from the per-priority counts (exactly
as if every waiting job raced: docs/developer-guide.md, TaskQueues and matching), then one of the
ten lowest free JobIDs at that priority is claimed in one transaction: the membership row is
deleted (it must have been there), the job moves activated -> sent with the pilot, site and CE, its
history and the count follow, and so does its job-count delta (matcher/services/rollups.py: one row
appended by the same statement, no shared counter row updated). Correctness rests here, never on
the matcher's cache of TaskQueues: the statement claims only a job that is still a member of the
TaskQueue and still activated, and for a private pilot only from a TaskQueue of its owner or of a
JobSharing group, as the database has it now.

The draw is folded into the claim (`claim_in`): one statement, one round trip, reads the
counts, draws the priority with the random numbers it is given (the same formula as
races.winning_user_priority), and claims. The two-statement way (counts, then claim) remains
the fall-back when the drawn priority has no free job left and, with FOLD_DRAW off, the way the
benchmark compares against.

This module owns the claim's statements; their tables and job states come from the models and
matcher/lifecycle.py, never spelt in the SQL.
"""

from __future__ import annotations

import json
import random
from contextlib import nullcontext
from dataclasses import dataclass, field

import orjson
import psycopg
from django.db import OperationalError, connection

from core import clock
from core.db import connection_failure
from matcher import matching, races
from matcher.models import (
    MULTI_VALUED_FIELDS,
    PAYLOAD_FIELDS,
    Job,
    JobCountDelta,
    JobStatus,
    JobStatusHistory,
    TaskQueue,
    TaskQueueJob,
    TaskQueuePriorityCount,
)
from matcher.services import rollups
from shares.models import GridGroup, User

# The payload's JSON columns, decoded as the requirement lists are.
_JSON_PAYLOAD = ("arguments", "environment", "output_sandbox")
CANDIDATE_JOBS = 10  # the seed's "get the first ten and order them in random order"
USER_PRIORITIES = 11  # UserPriority 0..10 (the jobs' check constraint): one uniform each
FOLD_DRAW = True
# A claim statement that fails this way (a lock or statement timeout) gives up that candidate;
# the prepared statements run on psycopg's own cursor, whose errors Django does not wrap.
STATEMENT_FAILURES = (OperationalError, psycopg.OperationalError)


_COUNTS_SQL = (
    f"SELECT user_priority, jobs FROM {TaskQueuePriorityCount._meta.db_table} "
    "WHERE task_queue_id = %s AND jobs > 0"
)


def _prepared_cursor():
    """A server-side-binding psycopg cursor on Django's connection: the matcher's two hot
    statements are prepared once per connection (half the database's CPU per match was
    planning them). Same connection and transaction state as Django's own cursors. One cursor
    per connection, kept open for its next claim (a `with` block leaves it open): making one,
    with its adapters, and finding each parameter's dumper again cost a tenth of the claim's
    Python."""
    connection.ensure_connection()
    raw = connection.connection
    kept = getattr(connection, "_claim_cursor", None)
    if kept is None or kept.connection is not raw or kept.closed:
        kept = connection._claim_cursor = psycopg.Cursor(raw)
    return nullcontext(kept)


def _priority_counts(tq_id: int) -> dict[int, int]:
    with _prepared_cursor() as cur:
        cur.execute(_COUNTS_SQL, [tq_id], prepare=True)
        return dict(cur.fetchall())


@dataclass
class MatchedJob:
    """What a pilot is told about the job it got."""

    id: int
    name: str
    owner: str
    owner_dn: str | None
    owner_group: str
    setup: str
    cpu_time: int
    user_priority: int
    site: str
    grid_ce: str
    requirements: dict
    # What it runs: an empty executable, nothing to run (the pilot's own way).
    executable: str = ""
    arguments: list = field(default_factory=list)
    environment: dict = field(default_factory=dict)
    output_sandbox: list = field(default_factory=list)
    stdout_name: str = "std.out"
    stderr_name: str = "std.err"


def _claim(
    tq_id: int, priority: int, resource, pilot_reference, rng, pilot_id=None
) -> MatchedJob | None:
    """Claim one of the ten lowest free JobIDs at this priority; None if there is none."""
    fields = _claim_fields(resource, pilot_reference, pilot_id)
    try:
        return _claim_one(tq_id, priority, rng, fields)
    except STATEMENT_FAILURES as error:
        if connection_failure(error):
            raise  # the database is gone: a 503 for the pilot, not "no job"
        return None  # failed (a lock or statement timeout, say): the next candidate


# The tables and states the claim statements name, from the models and the lifecycle.
NAMES = {
    "activated": JobStatus.ACTIVATED.value,
    "sent": JobStatus.SENT.value,
    "jobs": Job._meta.db_table,
    "history": JobStatusHistory._meta.db_table,
    "taskqueues": TaskQueue._meta.db_table,
    "members": TaskQueueJob._meta.db_table,
    "counts": TaskQueuePriorityCount._meta.db_table,
    "users": User._meta.db_table,
    "groups": GridGroup._meta.db_table,
    "deltas": JobCountDelta._meta.db_table,
}

_JOB_COLUMNS = [
    "id",
    "name",
    "setup",
    "cpu_time",
    "user_priority",
    "site",
    "grid_ce",
    *MULTI_VALUED_FIELDS,
    *PAYLOAD_FIELDS,
]

# One statement, hence one transaction and one round trip: take the ten lowest job ids at this
# priority, try them from a random one on (the one at offset r, then the next, wrapping) and
# lock the first free one: its count row, its membership and its job row, SKIP LOCKED, so a
# claim never waits: not for a job another matcher is claiming or a kill or reschedule holds
# (so it never deadlocks with a service that locks the job first, then its membership), nor for
# the count row of a claim in flight at this priority, however long that claim's transaction
# stays open. Only the picked job is locked (as DIRAC's Matcher deletes one job at a time): a
# claim held open keeps no other job from the pilots. Then delete its membership, move the job
# activated -> sent, decrement the count, write the history, and return what the pilot needs.
_CLAIM_SQL = """
WITH ten AS (
    SELECT job_id, row_number() OVER (ORDER BY job_id) - 1 AS rn, count(*) OVER () AS n
    FROM (
        SELECT job_id FROM {members}
        WHERE task_queue_id = %(tq)s AND user_priority = %(prio)s ORDER BY job_id LIMIT {limit}
    ) lowest
), pick AS (
    SELECT m.job_id, j.site FROM {counts} c, ten
    JOIN {members} m ON m.job_id = ten.job_id JOIN {jobs} j ON j.id = m.job_id
    WHERE c.task_queue_id = %(tq)s AND c.user_priority = %(prio)s
    ORDER BY (ten.rn + ten.n - %(r)s %% ten.n) %% ten.n
    LIMIT 1 FOR UPDATE OF c, m, j SKIP LOCKED
), del AS (
    DELETE FROM {members} m USING pick WHERE m.job_id = pick.job_id
    RETURNING m.job_id
), cnt AS (
    UPDATE {counts} SET jobs = jobs - 1
    WHERE task_queue_id = %(tq)s AND user_priority = %(prio)s AND EXISTS (SELECT 1 FROM del)
), upd AS (
    UPDATE {jobs} j SET status = '{sent}', status_reason = %(reason)s,
        status_changed = %(now)s, site = %(site)s, grid_ce = %(grid_ce)s,
        pilot_reference = %(pilot_reference)s, pilot_id = %(pilot_id)s
    FROM del WHERE j.id = del.job_id AND j.status = '{activated}'
    RETURNING j.*
), hist AS (
    INSERT INTO {history} (job_id, at, from_status, to_status, reason)
    SELECT id, %(now)s, '{activated}', '{sent}', %(reason)s FROM upd
), counted AS (
    INSERT INTO {deltas} (owner_id, owner_group_id, from_site, from_status, to_site, to_status,
        n, at)
    SELECT upd.owner_id, upd.owner_group_id, pick.site, '{activated}', upd.site, '{sent}', 1,
        %(now)s
    FROM upd, pick
)
SELECT (SELECT count(*) FROM del), {columns}, u.username, u.dn, g.name
FROM (SELECT 1) one
LEFT JOIN upd ON true
LEFT JOIN {users} u ON u.id = upd.owner_id
LEFT JOIN {groups} g ON g.id = upd.owner_group_id
""".format(limit=CANDIDATE_JOBS, columns=", ".join(f"upd.{c}" for c in _JOB_COLUMNS), **NAMES)


def _loads(text: str):
    try:
        return orjson.loads(text)  # several times json's speed, on every claim's JSON columns
    except orjson.JSONDecodeError:
        return json.loads(text)  # what orjson refuses (an integer over 64 bits): as before


def _matched(row) -> MatchedJob:
    values = dict(zip(_JOB_COLUMNS, row[: len(_JOB_COLUMNS)], strict=True))
    owner, dn, group = row[len(_JOB_COLUMNS) :]
    reqs = {}
    for f in MULTI_VALUED_FIELDS:
        v = values.pop(f)
        reqs[f] = _loads(v) if isinstance(v, str) else v
    for f in _JSON_PAYLOAD:
        if isinstance(values[f], str):
            values[f] = _loads(values[f])
    return MatchedJob(owner=owner, owner_dn=dn, owner_group=group, requirements=reqs, **values)


def _claim_one(tq_id, priority, rng, fields) -> MatchedJob | None:
    params = {"tq": tq_id, "prio": priority, "r": rng.randrange(1 << 30), **fields}
    with _prepared_cursor() as cur:
        while True:
            cur.execute(_CLAIM_SQL, params, prepare=True)
            row = cur.fetchone()
            if row[0] == 0:
                return None  # no free job at this priority
            if row[1] is not None:
                rollups.fold_soon()
                return _matched(row[1:])
            # A stray membership of a job no longer waiting was removed: try again.


# --- the draw folded into the claim ------------------------------------------------------------


@dataclass
class Claimed:
    """What a claim in a TaskQueue found: the job (or None), how many jobs the TaskQueue held
    just before (0: it is empty), and whether the pilot may take its jobs at all."""

    job: MatchedJob | None
    waiting: int
    allowed: bool = True


_ALLOWED_SQL = (
    "SELECT EXISTS (SELECT 1 FROM {taskqueues} t "
    "JOIN {groups} g ON g.id = t.owner_group_id "
    "WHERE t.id = %s AND (t.owner_id = %s OR g.job_sharing))"
).format(**NAMES)

# The claim statement with the draw in front: `lv` the TaskQueue's counts, `win` the priority
# whose key is smallest (the keys of races.winning_user_priority, with the uniforms passed in,
# u[p + 1] for UserPriority p), `ok` the owner rule of a private pilot as the database has it;
# then the claim of _CLAIM_SQL at that priority. It returns the claim's outcome with the counts.
_DRAWN_CLAIM_SQL = """
WITH lv AS (
    SELECT user_priority AS p, jobs AS n FROM {counts}
    WHERE task_queue_id = %(tq)s AND jobs > 0
), win AS (
    SELECT p FROM lv ORDER BY (CASE WHEN %(dirac)s
        THEN (1.0::float8 - power((%(u)s::float8[])[p + 1], 1.0::float8 / n))
            / (CASE WHEN p > 0 THEN p::float8 ELSE %(zero)s::float8 END)
        ELSE -ln((%(u)s::float8[])[p + 1])
            / (n * (CASE WHEN p > 0 THEN p::float8 ELSE %(zero)s::float8 END))
    END), p LIMIT 1
), ok AS (
    SELECT %(owner)s::bigint IS NULL OR EXISTS (
        SELECT 1 FROM {taskqueues} t JOIN {groups} g ON g.id = t.owner_group_id
        WHERE t.id = %(tq)s AND (t.owner_id = %(owner)s::bigint OR g.job_sharing)
    ) AS allowed
), ten AS (
    SELECT job_id, row_number() OVER (ORDER BY job_id) - 1 AS rn, count(*) OVER () AS n
    FROM (
        SELECT job_id FROM {members}
        WHERE task_queue_id = %(tq)s AND user_priority = (SELECT p FROM win)
          AND (SELECT allowed FROM ok)
        ORDER BY job_id LIMIT {limit}
    ) lowest
), pick AS (
    SELECT m.job_id, j.site FROM {counts} c, ten
    JOIN {members} m ON m.job_id = ten.job_id JOIN {jobs} j ON j.id = m.job_id
    WHERE c.task_queue_id = %(tq)s AND c.user_priority = (SELECT p FROM win)
    ORDER BY (ten.rn + ten.n - %(r)s %% ten.n) %% ten.n
    LIMIT 1 FOR UPDATE OF c, m, j SKIP LOCKED
), del AS (
    DELETE FROM {members} m USING pick WHERE m.job_id = pick.job_id
    RETURNING m.job_id
), cnt AS (
    UPDATE {counts} SET jobs = jobs - 1
    WHERE task_queue_id = %(tq)s AND user_priority = (SELECT p FROM win)
      AND EXISTS (SELECT 1 FROM del)
), upd AS (
    UPDATE {jobs} j SET status = '{sent}', status_reason = %(reason)s,
        status_changed = %(now)s, site = %(site)s, grid_ce = %(grid_ce)s,
        pilot_reference = %(pilot_reference)s, pilot_id = %(pilot_id)s
    FROM del WHERE j.id = del.job_id AND j.status = '{activated}'
    RETURNING j.*
), hist AS (
    INSERT INTO {history} (job_id, at, from_status, to_status, reason)
    SELECT id, %(now)s, '{activated}', '{sent}', %(reason)s FROM upd
), counted AS (
    INSERT INTO {deltas} (owner_id, owner_group_id, from_site, from_status, to_site, to_status,
        n, at)
    SELECT upd.owner_id, upd.owner_group_id, pick.site, '{activated}', upd.site, '{sent}', 1,
        %(now)s
    FROM upd, pick
)
SELECT (SELECT count(*) FROM del), (SELECT p FROM win), (SELECT allowed FROM ok),
    (SELECT array_agg(p ORDER BY p) FROM lv), (SELECT array_agg(n ORDER BY p) FROM lv),
    {columns}, u.username, u.dn, g.name
FROM (SELECT 1) one
LEFT JOIN upd ON true
LEFT JOIN {users} u ON u.id = upd.owner_id
LEFT JOIN {groups} g ON g.id = upd.owner_group_id
""".format(limit=CANDIDATE_JOBS, columns=", ".join(f"upd.{c}" for c in _JOB_COLUMNS), **NAMES)


def _claim_fields(resource, pilot_reference: str, pilot_id: int | None = None) -> dict:
    return {
        "site": resource.site or "",
        "grid_ce": resource.grid_ce or "",
        "pilot_reference": pilot_reference[:255],
        "pilot_id": pilot_id,  # the Pilot the claim binds the job to (pilot_registry.py)
        "reason": f"matched to pilot {pilot_reference or '?'} at {resource.site}"[:255],
        "now": clock.now(),
    }


def _drawn_claim(tq_id, uniforms, rng, mode, owner_id, fields):
    """(Claimed, counts left to try) from the one-statement claim."""
    with _prepared_cursor() as cur:
        while True:
            params = {
                "tq": tq_id,
                "dirac": mode == matching.DIRAC,
                # As an array literal: repr() is the shortest text that reads back as the
                # same double; psycopg's list dumper cost a twentieth of the request.
                "u": "{" + ",".join(map(repr, uniforms)) + "}",
                "zero": matching.ZERO_PRIORITY_WEIGHT,
                "owner": owner_id,
                "r": rng.randrange(1 << 30),
                **fields,
            }
            try:
                cur.execute(_DRAWN_CLAIM_SQL, params, prepare=True)
            except STATEMENT_FAILURES as error:
                if connection_failure(error):
                    raise
                return Claimed(None, 1), {}  # failed (a lock or statement timeout): next TQ
            taken, winner, allowed, levels, jobs, *rest = cur.fetchone()
            counts = dict(zip(levels or [], jobs or [], strict=True))
            waiting = sum(counts.values())
            if not allowed or not counts:
                return Claimed(None, waiting, bool(allowed)), {}
            if taken and rest[0] is not None:
                rollups.fold_soon()
                return Claimed(_matched(rest), waiting), {}
            if not taken:
                counts.pop(winner)  # nothing free at this priority now: the others remain
                return Claimed(None, waiting), counts
            # A stray membership of a job no longer waiting was removed: draw again.
            uniforms = [1.0 - rng.random() for _ in range(USER_PRIORITIES)]


def _allowed(tq_id: int, owner_id: int | None) -> bool:
    if owner_id is None:
        return True
    with connection.cursor() as cur:
        cur.execute(_ALLOWED_SQL, [tq_id, owner_id])
        return bool(cur.fetchone()[0])


def claim_in(
    tq_id: int,
    resource: matching.Resource,
    pilot_reference: str,
    rng: random.Random,
    mode: str,
    pilot_id: int | None = None,
) -> Claimed:
    """Draw the UserPriority and claim a job of this TaskQueue for the resource (and bind it
    to the pilot `pilot_id`, whose credential alone may then report on it)."""
    uniforms = [1.0 - rng.random() for _ in range(USER_PRIORITIES)]
    owner_id = resource.owner_id if resource.private else None
    if FOLD_DRAW:
        fields = _claim_fields(resource, pilot_reference, pilot_id)
        claimed, counts = _drawn_claim(tq_id, uniforms, rng, mode, owner_id, fields)
        if claimed.job is not None or not counts:
            return claimed
        waiting = claimed.waiting
    else:
        counts = _priority_counts(tq_id)
        waiting = sum(counts.values())
        if not counts:
            return Claimed(None, 0)
        if not _allowed(tq_id, owner_id):
            return Claimed(None, waiting, allowed=False)
        if max(counts) < USER_PRIORITIES:
            priority = races.winning_user_priority(counts, uniforms, mode)
            job = _claim(tq_id, priority, resource, pilot_reference, rng, pilot_id)
            if job is not None:
                return Claimed(job, waiting)
            counts.pop(priority)
    # The drawn priority had no free job (claimed meanwhile): draw among the others.
    while counts:
        priority = matching.draw_user_priority(counts, rng, mode)
        job = _claim(tq_id, priority, resource, pilot_reference, rng, pilot_id)
        if job is not None:
            return Claimed(job, waiting)
        counts.pop(priority)
    return Claimed(None, waiting)
