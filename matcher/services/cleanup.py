"""Repairing what a crash or a bug could leave behind: activated jobs outside any TaskQueue,
memberships of jobs no longer waiting, per-priority counts that drifted from the memberships,
empty TaskQueues. The same lock order as every move: the job's row, then its membership.
"""

from __future__ import annotations

from collections import Counter

from django.db import transaction
from django.db.models import Count, Exists, OuterRef

from core import gdpconfig
from core.cycles import cycle
from matcher.lifecycle import ACTIVATED
from matcher.models import Job, TaskQueue, TaskQueueJob, TaskQueuePriorityCount
from matcher.services import enqueue, housekeeping, moves

ORPHANS_PER_RUN = 10000


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
            # Set by increments (the rows are locked: nothing moves them meanwhile).
            fix = Counter({(tq, p): real.get(p, 0) - row.jobs for p, row in rows.items()})
            if TaskQueue.objects.filter(pk=tq).exists():
                fix.update({(tq, p): n for p, n in real.items() if p not in rows})
            enqueue.add_to_counts(Counter({k: n for k, n in fix.items() if n}))
    return len(suspects)


def _reenqueue(job_id: int, segments) -> None:
    """An activated job outside any TaskQueue joins the TaskQueue of its definition."""
    with transaction.atomic():
        job = moves.lock_job(job_id, related=())
        if job.status != ACTIVATED or TaskQueueJob.objects.filter(job_id=job_id).exists():
            return
        [tq] = enqueue.taskqueues_for([enqueue.job_definition(job, segments)])
        enqueue.join_taskqueues([(job.pk, tq.pk, job.user_priority)])
        Job.objects.filter(pk=job_id).update(task_queue=tq)


def _remove_strays(job_ids: list[int]) -> dict[int, tuple[int, int]]:
    """Memberships of jobs no longer activated go (the jobs locked first); returns them,
    {job id: (TaskQueue id, UserPriority)}."""
    with transaction.atomic():
        locked = moves.lock_jobs(job_ids)
        stray = [j for j in job_ids if locked.rows.get(j, (None,))[0] != ACTIVATED]
        return enqueue.leave_taskqueues(stray)


@cycle("taskqueue_cleanup")
def taskqueue_cleanup() -> dict:
    """Repair what a crash or a bug could leave: activated jobs outside any TaskQueue are
    enqueued again, memberships of jobs no longer waiting are removed, per-priority counts are
    made exact, and empty TaskQueues are dropped."""
    member = TaskQueueJob.objects.filter(job_id=OuterRef("pk"))
    orphans = list(
        Job.objects.filter(status=ACTIVATED)
        .filter(~Exists(member))
        .values_list("pk", flat=True)[:ORPHANS_PER_RUN]
    )
    segments = gdpconfig.get("CPUSegments")
    for pk in orphans:
        moves.retry_on_race(lambda pk=pk: _reenqueue(pk, segments))
    stray_jobs = list(
        TaskQueueJob.objects.exclude(job__status=ACTIVATED).values_list("job_id", flat=True)
    )
    removed = moves.retry_on_race(lambda: _remove_strays(stray_jobs)) if stray_jobs else {}
    fixed = repair_counts()
    empty = TaskQueue.objects.filter(
        ~Exists(TaskQueueJob.objects.filter(task_queue=OuterRef("pk")))
    )
    dropped = housekeeping.drop_empty_taskqueues(
        list(empty.values_list("pk", flat=True)) + [tq for tq, _ in removed.values()]
    )
    return {
        "reenqueued_jobs": len(orphans),
        "removed_memberships": len(removed),
        "repaired_counts": fixed,
        "dropped_taskqueues": len(dropped),
    }
