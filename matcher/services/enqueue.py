"""The one way into and out of TaskQueues: the TaskQueue of each definition (created where
missing), the memberships of the waiting jobs with the per-priority counts kept beside them.
The TaskQueues left empty are dropped by housekeeping.py, which also recomputes the priorities
that a TaskQueue appearing or vanishing changes.

A membership exists exactly for each activated job, at the UserPriority the job has
(tests/_invariants.py). Only the job moves (matcher.services.moves) and the claim
(matcher.claims) join and leave, inside the transaction that moves the job and holding its
row lock: the job first, then its membership. Counts change by increments only
(`add_to_counts`: `jobs = jobs + n`), never read and written back.

Rows go in by number: the ORM for a few, one INSERT over arrays for more, COPY for many
(core.db.bulk_insert).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from django.db import connection, models

from core import clock, db
from core.db import among
from matcher import changelog, taskqueues
from matcher.models import (
    MULTI_VALUED_FIELDS,
    Job,
    TaskQueue,
    TaskQueueJob,
    TaskQueuePriorityCount,
)
from matcher.services import housekeeping

# Up to this many rows, the ORM inserts them; from COPY_FROM on, COPY does.
FEW = 10
COPY_FROM = 5000

MEMBER_COLUMNS = ("job_id", "task_queue_id", "user_priority")
MEMBER_TYPES = ("bigint", "bigint", "integer")


def insert_rows(
    model: type[models.Model],
    columns: Sequence[str],
    pg_types: Sequence[str],
    rows: Sequence[Sequence],
    cursor=None,
) -> int:
    """Insert `rows` (values in the order of `columns`, attribute names) into the model's
    table, the way their number calls for; returns the number of rows. With a `cursor` (a
    caller writing several tables on one), never the ORM."""
    if not rows:
        return 0
    if len(rows) <= FEW and cursor is None:
        model.objects.bulk_create([model(**dict(zip(columns, r, strict=True))) for r in rows])
        return len(rows)
    types = None if len(rows) >= COPY_FROM else pg_types
    return db.bulk_insert(cursor, model, columns, rows, pg_types=types)


# --- TaskQueues and their counts -----------------------------------------------------------------


def taskqueues_for(definitions: Sequence[dict]) -> list[TaskQueue]:
    """The TaskQueue of each definition, created where missing. Call inside a transaction."""
    keyed = {taskqueues.definition_key(d): d for d in definitions}
    found = {tq.key: tq for tq in TaskQueue.objects.filter(key__in=keyed)}
    missing = [k for k in keyed if k not in found]
    if missing:
        now = clock.now()
        # ignore_conflicts: a concurrent submission may create the same TaskQueue; on
        # PostgreSQL we wait for it on the unique key, then read the row it made.
        TaskQueue.objects.bulk_create(
            [TaskQueue(key=k, created=now, **keyed[k]) for k in missing], ignore_conflicts=True
        )
        found.update({tq.key: tq for tq in TaskQueue.objects.filter(key__in=missing)})
        changelog.taskqueues_created(found[k].pk for k in missing)
        # A TaskQueue appeared: its group's priorities change (new entity, new J values).
        housekeeping.priorities_due({d["owner_group_id"] for k, d in keyed.items() if k in missing})
    return [found[taskqueues.definition_key(d)] for d in definitions]


def job_definition(job: Job, segments: Sequence[int]) -> dict:
    """The TaskQueue definition of a job (as it is now)."""
    return taskqueues.definition(
        job.owner_id,
        job.owner_group_id,
        job.setup,
        job.cpu_time,
        {f: getattr(job, f) for f in MULTI_VALUED_FIELDS},
        segments,
    )


def add_to_counts(deltas: Counter) -> None:
    """Apply {(task_queue_id, user_priority): +-n} to the per-priority counts. Call inside the
    transaction that changed the membership. Rows are touched in one order, so concurrent
    submissions never deadlock on them."""
    table = TaskQueuePriorityCount._meta.db_table
    ups = [(tq, p, n) for (tq, p), n in sorted(deltas.items()) if n > 0]
    downs = [(tq, p, n) for (tq, p), n in sorted(deltas.items()) if n < 0]
    with connection.cursor() as cur:
        if ups:
            cur.executemany(
                f"INSERT INTO {table} (task_queue_id, user_priority, jobs) VALUES (%s, %s, %s) "
                "ON CONFLICT (task_queue_id, user_priority) "
                f"DO UPDATE SET jobs = {table}.jobs + excluded.jobs",
                ups,
            )
        if downs:
            cur.executemany(
                f"UPDATE {table} SET jobs = jobs + %s "
                "WHERE task_queue_id = %s AND user_priority = %s",
                [(n, tq, p) for tq, p, n in downs],
            )


# --- membership ----------------------------------------------------------------------------------


def join_taskqueues(members: Sequence[tuple[int, int, int]], cursor=None) -> None:
    """Make jobs members of their TaskQueues: [(job id, TaskQueue id, UserPriority)], and
    count them. Call in the transaction that moves them to activated (or creates them so),
    holding their rows (locked, or inserted by it)."""
    insert_rows(TaskQueueJob, MEMBER_COLUMNS, MEMBER_TYPES, members, cursor)
    add_to_counts(Counter((tq, prio) for _job, tq, prio in members))


def leave_taskqueues(job_ids: Iterable[int]) -> dict[int, tuple[int, int]]:
    """Take jobs out of their TaskQueues and uncount them; returns {job id: (TaskQueue id,
    UserPriority)} of those that were members. Call holding the jobs' row locks: the
    memberships are locked second (the one lock order)."""
    ids = sorted(set(job_ids))
    if not ids:
        return {}
    if len(ids) == 1:
        rows = list(
            TaskQueueJob.objects.select_for_update()
            .filter(job_id=ids[0])
            .values_list("job_id", "task_queue_id", "user_priority")
        )
    else:
        rows = []
        for part in among(TaskQueueJob.objects.select_for_update(), "job", ids):
            rows += part.order_by("job_id").values_list("job_id", "task_queue_id", "user_priority")
    members = {job: (tq, prio) for job, tq, prio in rows}
    if not members:
        return {}
    for part in among(TaskQueueJob.objects.all(), "job", sorted(members)):
        part._raw_delete(TaskQueueJob.objects.db)
    add_to_counts(Counter({key: -n for key, n in Counter(members.values()).items()}))
    return members
