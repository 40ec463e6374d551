"""Moving jobs between states: the one writer of a job's state, of its status history and,
through matcher.services.enqueue, of its TaskQueue membership.

Every move
- takes its locks in one order: the job's row, then its TaskQueue membership. The claim
  (matcher.claims) locks membership and job together, SKIP LOCKED: it never waits for a move
  and never deadlocks with one;
- is checked against matcher.lifecycle: the move named `by` (one of lifecycle.MOVES) must
  take the job from its current state to the new one, else MoveRefused and nothing is written;
- writes one JobStatusHistory row;
- leaves the job a TaskQueue member exactly when it is activated: a job moved out of
  activated, or into a final state, leaves its TaskQueue; a job moved to activated joins the
  TaskQueue of its definition (the counts follow by increments).

One job: `lock_job`, then `move_job` (the ORM, a few statements). Many: `lock_jobs`, then
`move_jobs` (one statement per table, over arrays). New jobs: `insert_jobs` (model
instances, the ORM) or `create_jobs` (rows, or COPY text, for the bulk paths). A transaction
that lost a race (a deadlock, a serialisation failure, a TaskQueue dropped under it) is run
again by `retry_on_race`.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from django.db import IntegrityError, OperationalError, connection

from core import clock, db, gdpconfig
from matcher import errors, lifecycle
from matcher.lifecycle import ACTIVATED, FAILED, FINAL_STATES, NEW
from matcher.models import MULTI_VALUED_FIELDS, Job, JobStatusHistory, TaskQueue, TaskQueueJob
from matcher.services import enqueue, failures, rollups

log = logging.getLogger(__name__)

T = TypeVar("T")

# Who moves a job: the `by` of each of lifecycle.MOVES (timeouts: timeout_move(action)).
SUBMISSION = "submission"
DEFINITION = "task definition"
BROKERAGE = "brokerage"
BROKERAGE_HOLDS = "brokerage holds"
CLAIM = "claim"
PILOT_REPORT = "pilot report"
KILL = "kill"
RESCHEDULE = "reschedule"

# (by, from, to) for every move lifecycle.MOVES allows.
PERMITTED = frozenset((m.by, s, t) for m in lifecycle.MOVES for s in m.sources for t in m.targets)
assert {m.by for m in lifecycle.MOVES} >= {
    SUBMISSION,
    DEFINITION,
    BROKERAGE,
    BROKERAGE_HOLDS,
    CLAIM,
    PILOT_REPORT,
    KILL,
    RESCHEDULE,
}

HISTORY_COLUMNS = ("job_id", "at", "from_status", "to_status", "reason")
HISTORY_TYPES = ("bigint", "timestamptz", "text", "text", "text")


class JobActionError(Exception):
    """An action that the job's state does not allow (answered as 409 by the API)."""


class MoveRefused(JobActionError):
    """A move that matcher.lifecycle does not allow from the job's state: nothing written."""


class NotHeld(JobActionError):
    """A pilot reported on a job it does not hold (any more: a reschedule revoked its claim).
    `job_id` and `pilot_id` say which, for a message naming the pilot's reference."""

    def __init__(self, job_id: int, pilot_id: int | None, message: str | None = None):
        self.job_id, self.pilot_id = job_id, pilot_id
        super().__init__(message or f"job {job_id} is no longer held by pilot {pilot_id}")


def timeout_move(action: str) -> str:
    """The `by` of a timeout rule's action (timeouts.rules: rebroker, reassign, close, fail)."""
    return f"timeout: {action}"


def permitted(by: str, from_status: str, to: str) -> bool:
    """Whether the move `by` of lifecycle.MOVES takes a job from `from_status` (NEW: a job
    being created) to `to`."""
    return (by, from_status, to) in PERMITTED


def check_move(by: str, job_id: int | None, from_status: str, to: str) -> None:
    """Raise MoveRefused unless lifecycle.MOVES lets `by` move the job from_status -> to."""
    if not permitted(by, from_status, to):
        was = f"is {from_status}" if from_status else "is new"
        raise MoveRefused(f"job {job_id} {was}: {by} cannot move it to {to}")


def retry_on_race(fn: Callable[[], T], attempts: int = 5) -> T:
    """Run `fn` (one transaction) again when it lost a race: a TaskQueue dropped under it (its
    foreign key is checked at commit), a deadlock or a serialisation failure (psycopg's
    DeadlockDetected and SerializationFailure reach Django as OperationalError). A short
    random pause first, so that the transactions that collided do not collide again."""
    for attempt in range(attempts):
        try:
            return fn()
        except (IntegrityError, OperationalError):
            if attempt == attempts - 1:
                raise
            log.info("retrying a transaction that lost a race (attempt %d)", attempt + 2)
            time.sleep(random.uniform(0, 0.005 * 2**attempt))
    raise AssertionError("unreachable")


def record_history(rows: Sequence[tuple]) -> None:
    """Status history rows (job id, at, from, to, reason): one per move. Call in the
    transaction of the moves."""
    rows = [(j, at, f, t, r[:255]) for j, at, f, t, r in rows]
    enqueue.insert_rows(JobStatusHistory, HISTORY_COLUMNS, HISTORY_TYPES, rows)


def reserve_job_ids(n: int, cursor=None) -> list[int]:
    """`n` increasing job ids for the rows of a bulk `create_jobs` (COPY cannot return the ids
    it made). Taken from the table's sequence, which is not transactional: they stay ours
    whichever connection writes the rows, and a rolled-back insert leaves a gap, as any does."""
    if n <= 0:
        return []
    if cursor is None:
        with connection.cursor() as cur:
            return reserve_job_ids(n, cur)
    cursor.execute(
        "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
        [Job._meta.db_table, Job._meta.pk.column, n],
    )
    return [r[0] for r in cursor.fetchall()]


# --- one job -------------------------------------------------------------------------------------


def lock_job(job_id: int, related: Sequence[str] = ("owner_group",)) -> Job:
    """The job's row, locked: the first lock of every move, before its TaskQueue membership
    (the claim skips a locked job), so two moves of one job wait for each other instead of
    deadlocking. Call inside a transaction; Job.DoesNotExist if there is no such job."""
    qs = Job.objects.select_for_update(of=("self",))
    if related:
        qs = qs.select_related(*related)
    return qs.get(pk=job_id)


def _touches_membership(from_status: str, to: str) -> bool:
    # After any move a job is a member exactly when activated: a move out of activated
    # leaves, one into it joins, one into a final state makes sure nothing is left behind.
    return from_status == ACTIVATED or to == ACTIVATED or to in FINAL_STATES


def move_job(
    job: Job,
    to: str,
    reason: str,
    *,
    by: str,
    now: datetime | None = None,
    status_reason: str | None = None,
    note: str = "joined",
    **fields,
) -> int | None:
    """Move one job, locked by `lock_job` in this transaction, to `to`, as `by` (one of
    lifecycle.MOVES; MoveRefused if it does not allow the move). The job leaves its
    TaskQueue; moved to activated, it joins the TaskQueue of its definition (the history
    reason then ends "; {note} TaskQueue {id}"). One history row; `fields` (model field
    names) are set with the state; `status_reason` defaults to the history reason.

    Returns the TaskQueue the job left, if it did not join it again: pass it to
    `housekeeping.drop_if_empty` after the commit."""
    from_status, from_site = job.status, job.site
    check_move(by, job.pk, from_status, to)
    now = now or clock.now()
    left = joined = None
    if _touches_membership(from_status, to):
        left = enqueue.leave_taskqueues([job.pk]).get(job.pk, (None, None))[0]
    if to == ACTIVATED:
        [tq] = enqueue.taskqueues_for([enqueue.job_definition(job, gdpconfig.get("CPUSegments"))])
        enqueue.join_taskqueues([(job.pk, tq.pk, job.user_priority)])
        fields["task_queue"], joined = tq, tq.pk
        reason = f"{reason}; {note} TaskQueue {tq.pk}"
    record_history([(job.pk, now, from_status, to, reason)])
    failed_before = failures.keys([job.pk]) if from_status == FAILED else {}
    job.status = to
    job.status_reason = (reason if status_reason is None else status_reason)[:255]
    job.status_changed = now
    for name, value in fields.items():
        setattr(job, name, value)
    job.save(update_fields=["status", "status_reason", "status_changed", *fields])
    failures.record(failed_before, failures.keys([job.pk]) if to == FAILED else {})
    rollups.record([(job.owner_id, job.owner_group_id, from_site, from_status, job.site, to)], now)
    return left if left != joined else None


# --- many jobs -----------------------------------------------------------------------------------


@dataclass
class Locked:
    """Jobs whose rows this transaction locked (`lock_jobs`): {id: (status, *columns)}; a job
    that does not exist is absent. `counted`: {id: (owner, group, site)}, what the job counts
    under (matcher/services/rollups.py)."""

    rows: dict[int, tuple]
    counted: dict[int, tuple] = field(default_factory=dict)

    def status(self, job_id: int) -> str:
        return self.rows[job_id][0]


def lock_jobs(ids, columns: Sequence[str] = ()) -> Locked:
    """Lock these jobs' rows in id order (their memberships are locked after, by the move),
    reading their state and `columns`. Call inside a transaction."""
    rows: dict[int, tuple] = {}
    counted: dict[int, tuple] = {}
    keys = ("owner_id", "owner_group_id", "site")
    for part in enqueue.among(Job.objects.select_for_update(), "id", sorted(set(ids))):
        found = part.order_by("pk").values_list("pk", *keys, "status", *columns)
        for pk, o, g, site, *rest in found:
            rows[pk] = tuple(rest)
            counted[pk] = (o, g, site)
    return Locked(rows, counted)


@dataclass
class Step:
    """One job's move in `move_jobs`: to `to` as `by`, for `reason`. `clear_match` forgets
    where a pilot took it (site, CE, pilot, heartbeat); a move to activated always does, and
    counts one more rescheduling (the history reason then ends "; {note} TaskQueue {id}")."""

    job_id: int
    to: str
    reason: str
    by: str
    clear_match: bool = False
    note: str = "joined"
    error_code: int | None = None  # a move to failed: why, as matcher.errors names it


@dataclass
class Moved:
    """What `move_jobs` did: the reason recorded per job, the TaskQueue each job moved to
    activated joined, and the TaskQueues jobs left (pass to `housekeeping.drop_if_empty` after the
    commit)."""

    reasons: dict[int, str] = field(default_factory=dict)
    joined: dict[int, int] = field(default_factory=dict)
    left: set[int] = field(default_factory=set)


def move_jobs(locked: Locked, steps: Sequence[Step], now: datetime) -> Moved:
    """Move many jobs locked by `lock_jobs` in this transaction: each step is checked against
    lifecycle.MOVES first (MoveRefused: nothing is written), then the jobs leave their
    TaskQueues, those moved to activated join the TaskQueues of their definitions, and the
    job rows and history rows are written a statement per table (and per kind of change)."""
    for s in steps:
        check_move(s.by, s.job_id, locked.status(s.job_id), s.to)
    moved = Moved(reasons={s.job_id: s.reason[:255] for s in steps})
    left = enqueue.leave_taskqueues(
        s.job_id for s in steps if _touches_membership(locked.status(s.job_id), s.to)
    )
    back = [s for s in steps if s.to == ACTIVATED]
    if back:
        moved.joined = _rejoin([s.job_id for s in back])
        for s in back:
            joined = f"{s.note} TaskQueue {moved.joined[s.job_id]}"
            moved.reasons[s.job_id] = f"{s.reason}; {joined}"[:255]
    moved.left = {tq for tq, _ in left.values()} - set(moved.joined.values())
    failed_before = failures.keys(s.job_id for s in steps if locked.status(s.job_id) == FAILED)
    groups: dict[tuple[bool, bool], list[tuple]] = {}
    for s in steps:
        into = s.to == ACTIVATED
        row = (s.job_id, s.to, moved.reasons[s.job_id], moved.joined.get(s.job_id))
        groups.setdefault((s.clear_match or into, into), []).append(row)
    for (clear, into), rows in groups.items():
        _update_jobs(rows, now, clear, into)
    failed: dict[int, list[int]] = {}
    for s in steps:
        if s.to == FAILED and s.error_code is not None:
            failed.setdefault(s.error_code, []).append(s.job_id)
    for code, ids in failed.items():
        Job.objects.filter(pk__in=ids).update(
            error_code=code, error_category=errors.describe(code).category
        )
    record_history(
        [(s.job_id, now, locked.status(s.job_id), s.to, moved.reasons[s.job_id]) for s in steps]
    )
    failures.record(failed_before, failures.keys(s.job_id for s in steps if s.to == FAILED))
    rollups.record(
        (
            (
                owner,
                group,
                site,
                locked.status(s.job_id),
                "" if s.clear_match or s.to == ACTIVATED else site,
                s.to,
            )
            for s in steps
            for owner, group, site in [locked.counted[s.job_id]]
        ),
        now,
    )
    return moved


def _rejoin(ids: list[int]) -> dict[int, int]:
    """Jobs back into the TaskQueues of their definitions: {job id: TaskQueue id}."""
    segments = gdpconfig.get("CPUSegments")
    jobs = list(
        Job.objects.filter(pk__in=ids)
        .order_by("pk")
        .only(
            "owner_id",
            "owner_group_id",
            "setup",
            "cpu_time",
            "user_priority",
            *MULTI_VALUED_FIELDS,
        )
    )
    tqs = enqueue.taskqueues_for([enqueue.job_definition(j, segments) for j in jobs])
    enqueue.join_taskqueues(
        [(j.pk, tq.pk, j.user_priority) for j, tq in zip(jobs, tqs, strict=True)]
    )
    return {j.pk: tq.pk for j, tq in zip(jobs, tqs, strict=True)}


def _update_jobs(rows: list[tuple], now: datetime, clear: bool, rejoin: bool) -> None:
    """Set state and reason per job (rows: id, state, reason, TaskQueue) in one statement
    (UPDATE … FROM unnest); `clear` forgets the match, `rejoin` records the TaskQueue joined and
    counts the rescheduling."""
    table = Job._meta.db_table
    sets = ["status = v.status", "status_reason = v.reason", "status_changed = %s"]
    if clear:
        sets += ["site = ''", "grid_ce = ''", "pilot_reference = ''", "pilot_id = NULL"]
        sets += ["heartbeat = NULL"]
    if rejoin:
        sets += ["task_queue_id = v.tq", "reschedule_count = j.reschedule_count + 1"]
    with connection.cursor() as cur:
        cur.execute(
            f"UPDATE {table} AS j SET {', '.join(sets)} "
            "FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::bigint[]) "
            "AS v(id, status, reason, tq) WHERE j.id = v.id",
            [now, *[list(col) for col in zip(*rows, strict=True)]],
        )


# --- new jobs ------------------------------------------------------------------------------------


def insert_jobs(jobs: list[Job], *, by: str, now: datetime, reason: str | None = None) -> None:
    """Store new jobs (model instances, each in its initial state as `by` of lifecycle.MOVES
    creates it; an activated one with its `task_queue` set) with the ORM: their rows, the
    memberships of the activated ones, and a history row each, for `reason` (None: the job's
    status reason; an activated job's ends "; joined TaskQueue {id}"). Call inside a
    transaction."""
    for status in {j.status for j in jobs}:
        check_move(by, None, NEW, status)
    Job.objects.bulk_create(jobs, batch_size=2000)
    waiting = [j for j in jobs if j.status == ACTIVATED]
    enqueue.join_taskqueues([(j.pk, j.task_queue_id, j.user_priority) for j in waiting])
    history = []
    for j in jobs:
        why = j.status_reason if reason is None else reason
        if j.status == ACTIVATED:
            why = f"{why}; joined TaskQueue {j.task_queue_id}"
        history.append((j.pk, now, NEW, j.status, why))
    record_history(history)
    failures.record({}, failures.keys(j.pk for j in jobs if j.status == FAILED))
    rollups.record(((j.owner_id, j.owner_group_id, "", NEW, j.site, j.status) for j in jobs), now)


@dataclass
class NewJobs:
    """New jobs in bulk, all in the state `status`, their ids reserved (`reserve_job_ids`):
    the job rows (values in the order of `columns`), the memberships (job, TaskQueue,
    UserPriority) of activated ones and a history row each (job, at, from, to, reason); each
    as tuples or, PostgreSQL only, as ready COPY text (bytes; then `counts`, {(TaskQueue,
    UserPriority): n}, must be given, and `rollup`, {(owner, group, site): n}, may be: else it
    is read off the text)."""

    status: str
    columns: Sequence[str]
    jobs: Sequence[Sequence] | bytes
    members: Sequence[Sequence] | bytes = ()
    history: Sequence[Sequence] | bytes = ()
    counts: Counter | None = None
    rollup: Counter | None = None


def create_jobs(new: NewJobs, *, by: str, cursor=None) -> None:
    """Write new jobs in bulk (`NewJobs`) as `by` (lifecycle.MOVES from NEW): COPY for text,
    otherwise core.db.bulk_insert (COPY, arrays or executemany by number). Jobs first, then
    memberships and history (they refer to the jobs), the counts last (concurrent writers
    hold those rows only for the moment of their commit). Call inside a transaction."""
    check_move(by, None, NEW, new.status)
    if cursor is None:
        with connection.cursor() as cur:
            return create_jobs(new, by=by, cursor=cur)
    if (new.members or new.counts) and new.status != ACTIVATED:
        raise MoveRefused(f"{new.status} jobs wait in no TaskQueue")
    if not isinstance(new.jobs, bytes):
        i = list(new.columns).index("status")
        if any(row[i] != new.status for row in new.jobs):
            raise MoveRefused(f"jobs created as {new.status} must all be {new.status}")
    tables = (
        (Job, new.columns, new.jobs),
        (TaskQueueJob, enqueue.MEMBER_COLUMNS, new.members),
        (JobStatusHistory, HISTORY_COLUMNS, new.history),
    )
    for model, columns, data in tables:
        if isinstance(data, bytes):
            db.copy_in(cursor, model._meta.db_table, columns, data)
        else:
            db.bulk_insert(cursor, model, columns, data)
    counts = new.counts
    if counts is None:
        counts = Counter((tq, prio) for _job, tq, prio in new.members)
    enqueue.add_to_counts(counts)
    if new.status == FAILED:
        failures.record({}, failures.keys(_ids_of(new)))
    rollup = new.rollup if new.rollup is not None else _rollup_of(new)
    rollups.record_counts(
        Counter({(o, g, "", NEW, site, new.status): n for (o, g, site), n in rollup.items()}),
        clock.now(),
    )
    return None


def _ids_of(new: NewJobs) -> list[int]:
    """The ids of new rows (their `id` column, from tuples or COPY text): failed jobs created
    in bulk are counted by id (matcher/services/failures.py)."""
    if "id" not in new.columns:
        raise ValueError("failed jobs created in bulk need their ids (reserve_job_ids)")
    i = list(new.columns).index("id")
    if isinstance(new.jobs, bytes):
        return [int(line.split(b"\t")[i]) for line in new.jobs.splitlines() if line]
    return [int(row[i]) for row in new.jobs]


def _rollup_of(new: NewJobs) -> Counter:
    """{(owner, group, site): jobs} of new rows, from tuples or COPY text (a tab-separated line
    per job; owner and group are integers, a site a name with no escape in it)."""
    cols = list(new.columns)
    at = [cols.index("owner_id"), cols.index("owner_group_id")]
    site = cols.index("site") if "site" in cols else None
    if isinstance(new.jobs, bytes):
        rows = (line.split(b"\t") for line in new.jobs.splitlines() if line)
        return Counter(
            (int(r[at[0]]), int(r[at[1]]), "" if site is None else r[site].decode()) for r in rows
        )
    return Counter((r[at[0]], r[at[1]], "" if site is None else r[site]) for r in new.jobs)


def analyse_job_tables() -> None:
    """Fresh planner statistics for the job tables after a bulk load, not whenever
    autovacuum gets to it: planned for an empty table, the job lists would scan a million
    rows."""
    tables = [Job, TaskQueueJob, JobStatusHistory, TaskQueue]
    with connection.cursor() as cur:
        cur.execute(f"ANALYZE {', '.join(m._meta.db_table for m in tables)}")
