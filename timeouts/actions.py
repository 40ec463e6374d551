"""What the timeouts cycle does to the jobs it picked: one transaction of bulk statements.

A timed-out job leaves its TaskQueue; then, by the rule's action (`timeouts.rules`): a task's
job goes back to `defined` and through job brokerage again (or, for the defined timeout, is
closed and its work retried as a new job, `brokerage.lifecycle`); a plain DIRAC job is
rescheduled into its TaskQueue (`activated`) or fails once MaxRescheduling is reached; the
others fail or are closed. Each action is written to the job's status history and to
TimeoutAction, what the timeouts page reads.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction

from brokerage import lifecycle
from brokerage.models import Task, TaskJob, TaskStatus
from config import db, gdpconfig
from matcher import services as job_services
from matcher.models import MULTI_VALUED_FIELDS, Job, JobStatus, JobStatusHistory, TaskQueueJob
from timeouts import rules
from timeouts.models import TimeoutAction

CHUNK = 5000


@dataclass
class Candidate:
    """A job as the scan read it: what a rule, or fast rebrokerage, may act on."""

    id: int
    status: str
    site: str
    status_changed: datetime
    heartbeat: datetime | None
    current_priority: int
    sub_status: str
    reschedule_count: int
    queue_id: int | None = None  # TaskJob.queue
    task_id: int | None = None
    gshare: str | None = None


@dataclass
class Planned:
    job: Candidate
    rule: str
    action: str
    reason: str
    queue: str


def _chunks(ids):
    ids = list(ids)
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


def among(qs, field: str, ids):
    """`qs` restricted to `ids`: one query with `= ANY(array)` on PostgreSQL (one parameter
    instead of thousands to quote and plan), IN lists of CHUNK ids elsewhere."""
    ids = list(ids)
    if not ids:
        return
    if db.is_postgresql():
        column = f'"{qs.model._meta.db_table}"."{qs.model._meta.get_field(field).column}"'
        where, params = db.id_in(column, ids)
        yield qs.extra(where=[where], params=params)
        return
    for part in _chunks(ids):
        yield qs.filter(**{f"{field}__in": part})


def apply(planned: list[Planned], now: datetime, run_id: int | None) -> Counter:
    """Carry the actions out in one transaction; returns counts per rule and per outcome.

    Lock order of every job transition (matcher.services): the jobs first, then their TaskQueue
    memberships (the matcher's claim skips a locked job). A job that changed since the scan (a
    pilot reported, a user killed it) is left alone."""
    if not planned:
        return Counter()
    by_id = {p.job.id: p for p in planned}
    ids = sorted(by_id)
    counts: Counter = Counter()
    tq_touched: set[int] = set()
    with transaction.atomic():
        current = {}
        for part in among(Job.objects.select_for_update(), "id", ids):
            for row in part.order_by("pk").values_list(
                "pk", "status", "status_changed", "heartbeat"
            ):
                current[row[0]] = row[1:]
        members = {}
        for part in among(TaskQueueJob.objects.select_for_update(), "job", ids):
            for job_id, tq, prio in part.order_by("job_id").values_list(
                "job_id", "task_queue_id", "user_priority"
            ):
                members[job_id] = (tq, prio)
        keep = [
            i
            for i in ids
            if current.get(i)
            == (by_id[i].job.status, by_id[i].job.status_changed, by_id[i].job.heartbeat)
        ]
        counts["changed_meanwhile"] = len(ids) - len(keep)

        leaving = [i for i in keep if i in members]
        deltas = Counter()
        for i in leaving:
            deltas[members[i]] -= 1
            tq_touched.add(members[i][0])
        for part in among(TaskQueueJob.objects.all(), "job", leaving):
            part.delete()
        job_services.add_to_counts(deltas)

        limit = gdpconfig.get("MaxRescheduling")
        # (clear the match, reschedule) -> [(id, to, reason, TaskQueue)]
        updates: dict[tuple[bool, bool], list[tuple]] = defaultdict(list)
        rebroker_tasks: set[int] = set()
        task_jobs: list[int] = []
        reschedule: list[int] = []
        reassigning: list[int] = []
        moves = []
        for i in keep:
            p = by_id[i]
            if p.action == rules.REASSIGN and p.job.task_id is not None:
                to = JobStatus.CLOSED
                rebroker_tasks.add(p.job.task_id)
                reassigning.append(i)
            elif p.action in (rules.REBROKER, rules.REASSIGN) and p.job.task_id is not None:
                to = JobStatus.DEFINED
                rebroker_tasks.add(p.job.task_id)
                task_jobs.append(i)
                updates[(True, False)].append((i, to, p.reason, None))
            elif p.action in (rules.REBROKER, rules.REASSIGN) and p.job.reschedule_count < limit:
                to = JobStatus.ACTIVATED
                reschedule.append(i)
            elif p.action in (rules.REBROKER, rules.REASSIGN):
                to = JobStatus.FAILED
                p.reason = f"{p.reason}; MaxRescheduling ({limit}) reached"[:255]
                updates[(False, False)].append((i, to, p.reason, None))
            else:
                to = rules.TO_STATUS[p.action]
                updates[(False, False)].append((i, to, p.reason, None))
            moves.append((i, p.job.status, to))
            counts[p.rule] += 1
            counts[f"to_{to}"] += 1
        reassigned, counts["retried"] = _reassign(reassigning, by_id)
        updates[(True, False)] += reassigned
        if reschedule:
            rows, dropped = _reschedule(reschedule, by_id)
            updates[(True, True)] = rows
            tq_touched |= dropped
        for (clear, resched), rows in updates.items():
            _update_jobs(rows, now, clear, resched)
        for part in among(TaskJob.objects.all(), "job", task_jobs):
            # Back through brokerage from scratch: no queue counts the job until it is placed.
            part.update(queue=None)
        if rebroker_tasks:
            Task.objects.filter(
                pk__in=rebroker_tasks, status__in=(TaskStatus.RUNNING, TaskStatus.PENDING)
            ).update(
                status=TaskStatus.READY,
                status_reason="jobs re-brokered by the timeout rules",
                retry_after=None,
                modified=now,
            )
        history, actions = [], []
        for i, from_status, to in moves:
            p = by_id[i]
            reason = p.reason[:255]
            history.append((i, now, from_status, to, reason))
            actions.append((run_id, now, p.rule, i, from_status, to, p.queue[:128], reason))
        _insert(
            JobStatusHistory._meta.db_table,
            ["job_id", "at", "from_status", "to_status", "reason"],
            ["bigint", "timestamptz", "text", "text", "text"],
            history,
        )
        _insert(
            TimeoutAction._meta.db_table,
            ["cycle_run", "at", "rule", "job_id", "from_status", "to_status", "queue", "reason"],
            ["bigint", "timestamptz", "text", "bigint", "text", "text", "text", "text"],
            actions,
        )
    if tq_touched:
        job_services._housekeeping(job_services.drop_empty_taskqueues, tq_touched)
    return counts


def _reassign(ids: list[int], by_id: dict) -> tuple[list[tuple], int]:
    """Task jobs the defined timeout closes: their work retried as new jobs (lifecycle). The
    closed jobs' rows [(id, closed, reason naming the retry, None)] for the caller, and the
    number of retries defined."""
    if not ids:
        return [], 0
    max_attempt = gdpconfig.get("TASK_MAX_ATTEMPT")
    rows, retried = [], 0
    for i, (retry, attempt) in lifecycle.reassign(ids, max_attempt).items():
        p = by_id[i]
        p.reason = lifecycle.reassign_reason(p.reason, retry, attempt, max_attempt)
        rows.append((i, JobStatus.CLOSED, p.reason, None))
        retried += retry is not None
    return rows, retried


def _reschedule(ids: list[int], by_id: dict) -> tuple[list[tuple], set[int]]:
    """Plain DIRAC jobs back into the TaskQueue of their definition, as `reschedule_job` does:
    the memberships and counts now, the job rows [(id, to, reason, TaskQueue)] for the caller;
    also the TaskQueues they left that may now be empty."""
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
            "task_queue_id",
            *MULTI_VALUED_FIELDS,
        )
    )
    tqs = job_services.taskqueues_for([job_services.job_definition(j, segments) for j in jobs])
    pairs = list(zip(jobs, tqs, strict=True))
    _insert(
        TaskQueueJob._meta.db_table,
        ["job_id", "task_queue_id", "user_priority"],
        ["bigint", "bigint", "integer"],
        [(j.pk, tq.pk, j.user_priority) for j, tq in pairs],
    )
    job_services.add_to_counts(Counter((tq.pk, j.user_priority) for j, tq in pairs))
    rows = []
    for j, tq in pairs:
        p = by_id[j.pk]
        p.reason = f"{p.reason}; rescheduled into TaskQueue {tq.pk}"[:255]
        rows.append((j.pk, JobStatus.ACTIVATED, p.reason, tq.pk))
    old = {j.task_queue_id for j in jobs if j.task_queue_id}
    return rows, old - {tq.pk for tq in tqs}


def _insert(table: str, columns: list[str], pg_types: list[str], rows: list[tuple]) -> None:
    """Insert many rows: one statement over arrays on PostgreSQL, executemany elsewhere."""
    db.bulk_insert(None, table, columns, rows, pg_types=pg_types, adapt_datetimes=True)


def _update_jobs(rows: list[tuple], now: datetime, clear: bool, reschedule: bool) -> None:
    """Set status and reason per job (rows: id, status, reason, TaskQueue) in one statement on
    PostgreSQL (UPDATE … FROM unnest), executemany elsewhere; `clear` forgets the match,
    `reschedule` puts the job in its TaskQueue and counts the rescheduling."""
    if not rows:
        return
    table = Job._meta.db_table
    sets = ["status = v.status", "status_reason = v.reason", "status_changed = %s"]
    if clear:
        sets += ["site = ''", "grid_ce = ''", "pilot_reference = ''", "pilot_id = NULL"]
        sets += ["heartbeat = NULL"]
    if reschedule:
        sets += ["task_queue_id = v.tq", "reschedule_count = j.reschedule_count + 1"]
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            cur.execute(
                f"UPDATE {table} AS j SET {', '.join(sets)} "
                "FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::bigint[]) "
                "AS v(id, status, reason, tq) WHERE j.id = v.id",
                [now, *[list(col) for col in zip(*rows, strict=True)]],
            )
        else:
            at = connection.ops.adapt_datetimefield_value(now)
            plain = [
                s.replace("v.status", "%(status)s")
                .replace("v.reason", "%(reason)s")
                .replace("v.tq", "%(tq)s")
                .replace("j.reschedule_count", "reschedule_count")
                .replace("= %s", "= %(at)s")
                for s in sets
            ]
            cur.executemany(
                f"UPDATE {table} SET {', '.join(plain)} WHERE id = %(id)s",
                [{"id": i, "status": st, "reason": r, "tq": tq, "at": at} for i, st, r, tq in rows],
            )
