"""Stateful operations on jobs and TaskQueues: submission, enqueueing, kill, reschedule.

Every operation is one transaction; views, viewsets, commands and cycles call these and nothing
else writes jobs or TaskQueue membership.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Iterable, Sequence

from django.db import DatabaseError, IntegrityError, OperationalError, connection, transaction
from django.db.models import Count, Exists, OuterRef

from config import clock, gdpconfig
from config.cycles import cycle
from matcher import changelog, housekeeping, lifecycle, taskqueues
from matcher.models import (
    MULTI_VALUED_FIELDS,
    Job,
    JobStatus,
    JobStatusHistory,
    TaskQueue,
    TaskQueueJob,
    TaskQueuePriorityCount,
)

log = logging.getLogger(__name__)


class JobActionError(Exception):
    """An action that the job's state does not allow (answered as 409 by the API)."""


def _retry_on_race(fn, attempts: int = 5):
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
    return None


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


def job_definition(job: Job, segments: Sequence[int]) -> dict:
    return taskqueues.definition(
        job.owner_id,
        job.owner_group_id,
        job.setup,
        job.cpu_time,
        {f: getattr(job, f) for f in MULTI_VALUED_FIELDS},
        segments,
    )


def submit_jobs(owner, specs: Sequence[dict]) -> list[Job]:
    """Store validated job specs as activated jobs in their TaskQueues, all or nothing.

    Each spec has owner_group (a GridGroup), setup, cpu_time, user_priority, optional name and
    jdl, and the multi-valued requirement lists.
    """

    def attempt() -> list[Job]:
        now = clock.now()
        segments = gdpconfig.get("CPUSegments")
        jobs = []
        for spec in specs:
            job = Job(
                owner=owner,
                owner_group=spec["owner_group"],
                name=spec.get("name", ""),
                setup=spec["setup"],
                cpu_time=spec["cpu_time"],
                user_priority=spec.get("user_priority", 1),
                jdl=spec.get("jdl", ""),
                status=JobStatus.ACTIVATED,
                created=now,
                status_changed=now,
                **{f: taskqueues.canonical_values(spec.get(f, ())) for f in MULTI_VALUED_FIELDS},
            )
            jobs.append(job)
        with transaction.atomic():
            tqs = taskqueues_for([job_definition(j, segments) for j in jobs])
            for job, tq in zip(jobs, tqs, strict=True):
                job.task_queue = tq
                job.status_reason = "waiting in TaskQueue"
            Job.objects.bulk_create(jobs, batch_size=2000)
            TaskQueueJob.objects.bulk_create(
                [
                    TaskQueueJob(
                        job=j, task_queue_id=j.task_queue_id, user_priority=j.user_priority
                    )
                    for j in jobs
                ],
                batch_size=2000,
            )
            add_to_counts(Counter((j.task_queue_id, j.user_priority) for j in jobs))
            JobStatusHistory.objects.bulk_create(
                [
                    JobStatusHistory(
                        job=j,
                        at=now,
                        from_status="",
                        to_status=JobStatus.ACTIVATED,
                        reason=f"submitted; joined TaskQueue {j.task_queue_id}",
                    )
                    for j in jobs
                ],
                batch_size=2000,
            )
        return jobs

    return _retry_on_race(attempt)


def define_jobs(owner, specs: Sequence[dict], reason: str = "defined by its task") -> list[Job]:
    """Store job specs as `defined`: generated by a task, waiting for brokerage to place them
    (a spec's own "reason" overrides `reason`). Call inside the caller's transaction."""
    now = clock.now()
    jobs = [
        Job(
            owner=owner,
            owner_group=spec["owner_group"],
            name=spec.get("name", ""),
            setup=spec["setup"],
            cpu_time=spec["cpu_time"],
            user_priority=spec.get("user_priority", 1),
            current_priority=spec.get("current_priority", 0),
            status=JobStatus.DEFINED,
            status_reason=spec.get("reason", reason)[:255],
            created=now,
            status_changed=now,
            **{f: taskqueues.canonical_values(spec.get(f, ())) for f in MULTI_VALUED_FIELDS},
        )
        for spec in specs
    ]
    Job.objects.bulk_create(jobs, batch_size=2000)
    JobStatusHistory.objects.bulk_create(
        [
            JobStatusHistory(
                job=j, at=now, from_status="", to_status=JobStatus.DEFINED, reason=j.status_reason
            )
            for j in jobs
        ],
        batch_size=2000,
    )
    return jobs


def activate_jobs(sites_by_job: dict[int, Sequence[str]], reason: str) -> int:
    """Brokerage placed these jobs: restrict each to its sites and let it wait in the TaskQueue
    of its new definition. Jobs no longer waiting for brokerage are left alone. Call inside a
    transaction; returns the number of jobs activated.

    Written for thousands of jobs a cycle: rows are read as tuples, one TaskQueue lookup per
    distinct definition, one UPDATE per (sites, TaskQueue), plain executemany inserts."""
    now = clock.now()
    segments = gdpconfig.get("CPUSegments")
    others = [f for f in MULTI_VALUED_FIELDS if f != "sites"]
    rows = list(
        Job.objects.select_for_update()
        .filter(pk__in=sorted(sites_by_job), status__in=lifecycle.WAITING_TO_BROKER)
        .order_by("pk")
        .values_list(
            "pk",
            "status",
            "owner_id",
            "owner_group_id",
            "setup",
            "cpu_time",
            "user_priority",
            *others,
        )
    )
    if not rows:
        return 0
    defs, def_of_row = {}, []
    for pk, _status, owner, group, setup, cpu, _prio, *multi in rows:
        sites = tuple(taskqueues.canonical_values(sites_by_job[pk]))
        requirements = {"sites": sites, **dict(zip(others, multi, strict=True))}
        defn = taskqueues.definition(owner, group, setup, cpu, requirements, segments)
        key = taskqueues.definition_key(defn)
        defs.setdefault(key, defn)
        def_of_row.append((key, sites))
    tq_of = {key: tq.pk for key, tq in zip(defs, taskqueues_for(list(defs.values())), strict=True)}
    groups: dict[tuple, list[int]] = {}
    for (pk, *_), (key, sites) in zip(rows, def_of_row, strict=True):
        groups.setdefault((sites, tq_of[key]), []).append(pk)
    status_reason = f"waiting in TaskQueue; {reason}"[:255]
    for (sites, tq_id), ids in groups.items():
        Job.objects.filter(pk__in=ids).update(
            sites=list(sites),
            task_queue_id=tq_id,
            status=JobStatus.ACTIVATED,
            status_reason=status_reason,
            status_changed=now,
        )
    members = [
        (pk, tq_of[key], prio)
        for (pk, _s, _o, _g, _su, _c, prio, *_), (key, _) in zip(rows, def_of_row, strict=True)
    ]
    at = connection.ops.adapt_datetimefield_value(now)
    history = [
        (pk, at, status, JobStatus.ACTIVATED, f"{reason}; joined TaskQueue {tq}"[:255])
        for (pk, status, *_), (_pk, tq, _p) in zip(rows, members, strict=True)
    ]
    with connection.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {TaskQueueJob._meta.db_table} (job_id, task_queue_id, user_priority) "
            "VALUES (%s, %s, %s)",
            members,
        )
        cur.executemany(
            f"INSERT INTO {JobStatusHistory._meta.db_table} "
            "(job_id, at, from_status, to_status, reason) VALUES (%s, %s, %s, %s, %s)",
            history,
        )
    add_to_counts(Counter((tq, prio) for _pk, tq, prio in members))
    return len(rows)


def set_waiting_status(job_ids: Iterable[int], to: str, reason: str) -> int:
    """Move jobs still waiting for brokerage to pending / throttled / defined, with history."""
    now = clock.now()
    jobs = list(
        Job.objects.select_for_update()
        .filter(pk__in=sorted(set(job_ids)), status__in=lifecycle.WAITING_TO_BROKER)
        .exclude(status=to)
        .only("pk", "status")
    )
    JobStatusHistory.objects.bulk_create(
        [
            JobStatusHistory(job=j, at=now, from_status=j.status, to_status=to, reason=reason[:255])
            for j in jobs
        ]
    )
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(
        status=to, status_reason=reason[:255], status_changed=now
    )
    return len(jobs)


def drop_empty_taskqueues(tq_ids: Iterable[int], skip_locked: bool = False) -> list[int]:
    """Delete those of these TaskQueues that hold no job; returns the ids deleted.

    The rows are locked first, and emptiness is checked under the lock, so a TaskQueue that a
    concurrent submission is filling is never removed from under it (that submission, which
    checks its foreign key at commit, retries instead).
    """
    ids = sorted(set(tq_ids))
    if not ids:
        return []
    with transaction.atomic():
        locked = list(
            TaskQueue.objects.select_for_update(skip_locked=skip_locked)
            .filter(pk__in=ids)
            .values_list("pk", flat=True)
        )
        busy = set(
            TaskQueueJob.objects.filter(task_queue_id__in=locked)
            .values_list("task_queue_id", flat=True)
            .distinct()
        )
        empty = [pk for pk in locked if pk not in busy]
        if empty:
            groups = set(
                TaskQueue.objects.filter(pk__in=empty).values_list("owner_group_id", flat=True)
            )
            TaskQueuePriorityCount.objects.filter(task_queue_id__in=empty)._raw_delete(
                TaskQueuePriorityCount.objects.db
            )
            TaskQueue.objects.filter(pk__in=empty)._raw_delete(TaskQueue.objects.db)
            changelog.taskqueues_dropped(empty)
            housekeeping.priorities_due(groups)
    return empty


def _housekeeping(fn, *args) -> None:
    """Work after an action has committed: its failure must not turn a done action into an
    error (the cleanup and priorities cycles repair the rest)."""
    try:
        fn(*args)
    except DatabaseError:
        log.warning("housekeeping %s%s failed", fn.__name__, args, exc_info=True)


def _change_status(job: Job, to: str, reason: str, **fields) -> None:
    """Move a locked job to `to` and record the transition. Call inside a transaction."""
    now = clock.now()
    JobStatusHistory.objects.create(
        job=job, at=now, from_status=job.status, to_status=to, reason=reason[:255]
    )
    job.status = to
    job.status_reason = reason[:255]
    job.status_changed = now
    for name, value in fields.items():
        setattr(job, name, value)
    job.save(update_fields=["status", "status_reason", "status_changed", *fields])


def _leave_taskqueue(job_id: int) -> int:
    """Remove a job from its TaskQueue's membership and counts; returns 1 if it was in. Call
    with the job's row locked (`_lock_job`): the job first, then its membership."""
    rows = list(
        TaskQueueJob.objects.select_for_update()
        .filter(job_id=job_id)
        .values_list("task_queue_id", "user_priority")
    )
    if not rows:
        return 0
    TaskQueueJob.objects.filter(job_id=job_id).delete()
    add_to_counts(Counter({rows[0]: -1}))
    return 1


def _refuse_unless_allowed(action: str, job: Job, user) -> None:
    reason = lifecycle.refusal(action, job.status, user.is_staff)
    if reason is not None:
        raise JobActionError(
            f"job {job.pk} cannot be {lifecycle.JOB_ACTIONS[action].done}: {reason}"
        )


def _lock_job(job_id: int) -> Job:
    """The job's row, locked: the first lock of every job transition, before its TaskQueue
    membership (the matcher's claim skips a locked job), so that two transitions of one job
    wait for each other instead of deadlocking."""
    return Job.objects.select_for_update(of=("self",)).select_related("owner_group").get(pk=job_id)


def kill_job(job_id: int, user, reason: str = "") -> Job:
    def attempt() -> tuple[Job, int]:
        with transaction.atomic():
            job = _lock_job(job_id)
            _refuse_unless_allowed("kill", job, user)
            left = _leave_taskqueue(job_id)
            _change_status(job, JobStatus.CANCELLED, reason or f"killed by {user.get_username()}")
            return job, left

    job, left = _retry_on_race(attempt)
    if left and job.task_queue_id:
        _housekeeping(drop_empty_taskqueues, [job.task_queue_id])
    return job


def _join_taskqueue(job: Job, segments) -> TaskQueue:
    [tq] = taskqueues_for([job_definition(job, segments)])
    TaskQueueJob.objects.create(job=job, task_queue=tq, user_priority=job.user_priority)
    add_to_counts(Counter({(tq.pk, job.user_priority): 1}))
    job.task_queue = tq
    return tq


def reschedule_job(job_id: int, user) -> Job:
    """Send a job back to wait in the TaskQueue of its (current) definition, from the states
    `lifecycle.JOB_ACTIONS` allows; a pilot's claim on it is revoked (its reference cleared, so
    that its later reports are refused)."""
    old_tq = None

    def attempt() -> Job:
        nonlocal old_tq
        with transaction.atomic():
            job = _lock_job(job_id)
            _refuse_unless_allowed("reschedule", job, user)
            limit = gdpconfig.get("MaxRescheduling")
            if job.reschedule_count >= limit:
                raise JobActionError(
                    f"job {job_id} was rescheduled {job.reschedule_count} times "
                    f"(MaxRescheduling = {limit})"
                )
            old_tq = job.task_queue_id
            _leave_taskqueue(job.pk)
            _join_taskqueue(job, gdpconfig.get("CPUSegments"))
            tq = job.task_queue
            revoked = (
                f"; pilot {job.pilot_reference}'s claim revoked" if job.pilot_reference else ""
            )
            _change_status(
                job,
                JobStatus.ACTIVATED,
                f"rescheduled by {user.get_username()}{revoked}; joined TaskQueue {tq.pk}",
                task_queue=tq,
                site="",
                grid_ce="",
                pilot_reference="",
                pilot=None,
                reschedule_count=job.reschedule_count + 1,
            )
            return job

    job = _retry_on_race(attempt)
    if old_tq and old_tq != job.task_queue_id:
        _housekeeping(drop_empty_taskqueues, [old_tq])
    return job


def repair_counts() -> int:
    """Make the per-priority counts equal to the membership again; returns TaskQueues fixed.

    Mismatches are found without locks, then each suspect TaskQueue is recounted with its count
    rows locked, so claims and submissions running meanwhile are neither lost nor counted twice.
    """
    actual = Counter(
        {
            (r["task_queue_id"], r["user_priority"]): r["n"]
            for r in TaskQueueJob.objects.order_by()
            .values("task_queue_id", "user_priority")
            .annotate(n=Count("*"))
        }
    )
    stored = Counter(
        {
            (tq, p): n
            for tq, p, n in TaskQueuePriorityCount.objects.values_list(
                "task_queue_id", "user_priority", "jobs"
            )
        }
    )
    suspects = {key[0] for key in set(actual) | set(stored) if actual[key] != stored[key]}
    for tq in sorted(suspects):
        with transaction.atomic():
            rows = {
                c.user_priority: c
                for c in TaskQueuePriorityCount.objects.select_for_update().filter(task_queue_id=tq)
            }
            real = dict(
                TaskQueueJob.objects.filter(task_queue_id=tq)
                .order_by()
                .values_list("user_priority")
                .annotate(n=Count("*"))
            )
            for p, row in rows.items():
                if row.jobs != real.get(p, 0):
                    TaskQueuePriorityCount.objects.filter(pk=row.pk).update(jobs=real.get(p, 0))
            missing = {p: n for p, n in real.items() if p not in rows}
            if missing and TaskQueue.objects.filter(pk=tq).exists():
                add_to_counts(Counter({(tq, p): n for p, n in missing.items()}))
    return len(suspects)


@cycle("taskqueue_cleanup")
def taskqueue_cleanup() -> dict:
    """Repair what a crash or a bug could leave: activated jobs outside any TaskQueue are
    enqueued again, memberships of jobs no longer waiting are removed, per-priority counts are
    made exact, and empty TaskQueues are dropped."""
    member = TaskQueueJob.objects.filter(job_id=OuterRef("pk"))
    orphans = list(
        Job.objects.filter(status=JobStatus.ACTIVATED)
        .filter(~Exists(member))
        .values_list("pk", flat=True)[:10000]
    )
    segments = gdpconfig.get("CPUSegments")
    for pk in orphans:

        def reenqueue(pk=pk):
            with transaction.atomic():
                job = Job.objects.select_for_update().get(pk=pk)
                if (
                    job.status != JobStatus.ACTIVATED
                    or TaskQueueJob.objects.filter(job_id=pk).exists()
                ):
                    return
                tq = _join_taskqueue(job, segments)
                Job.objects.filter(pk=pk).update(task_queue=tq)

        _retry_on_race(reenqueue)
    stray = TaskQueueJob.objects.exclude(job__status=JobStatus.ACTIVATED)
    stray_tqs = set(stray.values_list("task_queue_id", flat=True))
    removed_members = stray.delete()[0] if stray_tqs else 0
    fixed = repair_counts()
    empty = TaskQueue.objects.filter(
        ~Exists(TaskQueueJob.objects.filter(task_queue=OuterRef("pk")))
    )
    dropped = drop_empty_taskqueues(list(empty.values_list("pk", flat=True)) + list(stray_tqs))
    return {
        "reenqueued_jobs": len(orphans),
        "removed_memberships": removed_members,
        "repaired_counts": fixed,
        "dropped_taskqueues": len(dropped),
    }
