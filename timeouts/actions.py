"""What the timeouts cycle does to the jobs it picked: one transaction of bulk statements.

A timed-out job leaves its TaskQueue; then, by the rule's action (`timeouts.rules`): a task's
job goes back to `defined` and through job brokerage again (or, for the defined timeout, is
closed and its work retried as a new job, `brokerage.lifecycle`); a plain DIRAC job is
rescheduled into its TaskQueue (`activated`) or fails once MaxRescheduling is reached; the
others fail or are closed. The jobs are moved by the job lifecycle's service
(matcher.services: lock_jobs, then move_jobs, each move checked against matcher.lifecycle, a
status-history row each); this module decides the moves and writes TimeoutAction, what the
timeouts page reads, and the tasks' side.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from brokerage import lifecycle
from brokerage.models import Task, TaskJob, TaskStatus
from core import db, gdpconfig
from matcher import errors
from matcher import services as job_services
from matcher.lifecycle import ACTIVATED, CLOSED, DEFINED, FAILED
from matcher.models import Job
from timeouts import rules
from timeouts.models import TimeoutAction


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


def apply(planned: list[Planned], now: datetime, run_id: int | None) -> Counter:
    """Carry the actions out in one transaction; returns counts per rule and per outcome.

    The jobs' rows are locked first, then (by the moves) their TaskQueue memberships: the lock
    order of every job move (matcher.services.moves). A job that changed since the scan (a
    pilot reported, a user killed it) is left alone."""
    if not planned:
        return Counter()
    by_id = {p.job.id: p for p in planned}
    ids = sorted(by_id)
    counts: Counter = Counter()
    with transaction.atomic():
        locked = job_services.lock_jobs(ids, ("status_changed", "heartbeat"))
        keep = [
            i
            for i in ids
            if locked.rows.get(i)
            == (by_id[i].job.status, by_id[i].job.status_changed, by_id[i].job.heartbeat)
        ]
        counts["changed_meanwhile"] = len(ids) - len(keep)
        steps, reassigning, rebroker_tasks = _plan(keep, by_id, counts)
        counts["retried"] = _reassign(reassigning, by_id)
        steps += [_step(by_id[i], CLOSED, clear_match=True) for i in reassigning]
        steps.sort(key=lambda s: s.job_id)
        moved = job_services.move_jobs(locked, steps, now)
        task_jobs = [s.job_id for s in steps if s.to == DEFINED]
        for part in db.among(TaskJob.objects.all(), "job", task_jobs):
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
        _record(steps, moved, by_id, locked, now, run_id)
    job_services.drop_if_empty(moved.left)
    return counts


def _step(p: Planned, to: str, clear_match: bool = False) -> job_services.Step:
    return job_services.Step(
        p.job.id,
        to,
        p.reason,
        by=job_services.timeout_move(p.action),
        clear_match=clear_match,
        note="rescheduled into",
        error_code=failure_code(p.rule) if to == FAILED else None,
    )


def _plan(keep: list[int], by_id: dict, counts: Counter) -> tuple[list, list[int], set[int]]:
    """The moves of the jobs to act on, by each one's action: (steps, the task jobs the
    defined timeout closes for a retry (their steps follow once the retries are made), the
    tasks whose jobs go back to brokerage)."""
    limit = gdpconfig.get("MaxRescheduling")
    steps, reassigning, rebroker_tasks = [], [], set()
    for i in keep:
        p = by_id[i]
        if p.action == rules.REASSIGN and p.job.task_id is not None:
            to = CLOSED
            rebroker_tasks.add(p.job.task_id)
            reassigning.append(i)
        elif p.action in (rules.REBROKER, rules.REASSIGN) and p.job.task_id is not None:
            to = DEFINED
            rebroker_tasks.add(p.job.task_id)
            steps.append(_step(p, to, clear_match=True))
        elif p.action in (rules.REBROKER, rules.REASSIGN) and p.job.reschedule_count < limit:
            to = ACTIVATED  # rescheduled: clears the match and counts the rescheduling
            steps.append(_step(p, to))
        elif p.action in (rules.REBROKER, rules.REASSIGN):
            to = FAILED
            p.reason = f"{p.reason}; MaxRescheduling ({limit}) reached"[:255]
            steps.append(_step(p, to))
        else:
            to = rules.TO_STATUS[p.action]
            steps.append(_step(p, to))
        counts[p.rule] += 1
        counts[f"to_{to}"] += 1
    return steps, reassigning, rebroker_tasks


def failure_code(rule: str) -> int:
    """The error code of a job a timeout rule failed: a silent pilot's is a lost heartbeat, a
    transfer's that never ended a transfer timeout, any other state's an expiry."""
    if rule in ("heartbeat", "transferring_heartbeat"):
        return errors.LOST_HEARTBEAT_CODE
    if rule.startswith("transferring"):
        return errors.TRANSFER_TIMEOUT
    return errors.EXPIRED


def _record(steps, moved, by_id: dict, locked, now: datetime, run_id: int | None) -> None:
    """One TimeoutAction per job moved, with the reason its history recorded and the job's
    owner and group (who may see the row: TimeoutAction.objects.visible_to)."""
    owners = {
        pk: (owner, group)
        for part in db.among(Job.objects.all(), "id", [s.job_id for s in steps])
        for pk, owner, group in part.values_list("pk", "owner_id", "owner_group_id")
    }
    rows = []
    for s in steps:
        p = by_id[s.job_id]
        reason = moved.reasons[s.job_id]
        owner, group = owners.get(s.job_id, (None, None))
        status = locked.status(s.job_id)
        rows.append(
            (run_id, now, p.rule, s.job_id, status, s.to, p.queue[:128], reason, owner, group)
        )
    _insert(
        TimeoutAction._meta.db_table,
        ["cycle_run", "at", "rule", "job_id", "from_status", "to_status", "queue", "reason",
         "owner_id", "owner_group_id"],
        ["bigint", "timestamptz", "text", "bigint", "text", "text", "text", "text", "bigint",
         "bigint"],
        rows,
    )  # fmt: skip


def _reassign(ids: list[int], by_id: dict) -> int:
    """Task jobs the defined timeout closes: their work retried as new jobs (lifecycle), each
    closed job's reason naming its retry. Returns the number of retries defined."""
    if not ids:
        return 0
    max_attempt = gdpconfig.get("TASK_MAX_ATTEMPT")
    retried = 0
    for i, (retry, attempt) in lifecycle.reassign(ids, max_attempt).items():
        p = by_id[i]
        p.reason = lifecycle.reassign_reason(p.reason, retry, attempt, max_attempt)
        retried += retry is not None
    return retried


def _insert(table: str, columns: list[str], pg_types: list[str], rows: list[tuple]) -> None:
    """Insert many rows in one statement over arrays."""
    db.bulk_insert(None, table, columns, rows, pg_types=pg_types)
