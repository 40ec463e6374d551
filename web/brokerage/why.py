"""The brokerage's part of "why is my job not running?", and its dashboard panel."""

from brokerage.models import BrokerageRun, Task, TaskJob
from core import clock
from matcher.models import JobStatus
from web.matcher.why_part import Part

WAITING_FOR_BROKERAGE = (
    JobStatus.DEFINED,
    JobStatus.ASSIGNED,
    JobStatus.PENDING,
    JobStatus.THROTTLED,
)


def brokerage_parts(job) -> list[Part]:
    tj = TaskJob.objects.filter(job_id=job.pk).select_related("task", "queue", "task__nucleus")
    tj = tj.first()
    if tj is None:
        return []
    task = tj.task
    part = Part(f"Brokerage of task {task.pk}", blocking=job.status in WAITING_FOR_BROKERAGE)
    part.add(
        f"Task {task.pk} ({task.name}) is {task.status}: {task.status_reason}",
        f"/brokerage/tasks/{task.pk}/",
    )
    if task.nucleus_id:
        part.add(f"Its nucleus is {task.nucleus.name}", f"/brokerage/nuclei/{task.nucleus_id}/")
    run = BrokerageRun.objects.filter(task=task).defer("trace").first()
    if run is not None:
        removed = ", ".join(f"{k} {v}" for k, v in run.removed_counts.items()) or "none"
        if run.throttle is not None:
            removed = f"throttle {run.throttle.get('throttle')}"
        chosen = ", ".join(run.chosen) or "no candidate"
        part.add(
            f"Last decision ({run.get_kind_display()}) at {clock.label(run.at, 'Y-m-d H:i')}: "
            f"{run.outcome}; "
            f"chosen: {chosen}; removed by: {removed}",
            f"/brokerage/tasks/{task.pk}/?run={run.pk}#trace",
        )
    if task.retry_after and job.status in WAITING_FOR_BROKERAGE:
        part.add(f"Brokerage tries again after {clock.label(task.retry_after, 'Y-m-d H:i')}.")
    if tj.queue_id:
        part.add(f"Its brokerage chose queue {tj.queue.name} first", "/brokerage/queues/")
    return [part]


def brokerage_failures(user) -> dict:
    runs = (
        BrokerageRun.objects.filter(
            outcome__in=("pending", "throttled"), task__in=Task.objects.visible_to(user)
        )
        .select_related("task")
        .defer("trace")[:10]
    )
    return {
        "title": "Recent brokerage failures",
        "link": "/brokerage/tasks/?status=pending",
        "rows": [
            (
                f"task {r.task_id} {r.task.name}: {r.outcome} at {clock.label(r.at, 'H:i:s')} — "
                + (r.message or ", ".join(f"{k} {v}" for k, v in r.removed_counts.items())),
                f"/brokerage/tasks/{r.task_id}/?run={r.pk}#trace",
            )
            for r in runs
        ],
        "empty": "Every task found its place.",
    }
