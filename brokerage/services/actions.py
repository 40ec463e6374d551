"""A user's actions on a task, as JEDI's killTask and retryTask: kill cancels its jobs not ended
yet and gives it its final state; retry defines its unsuccessful jobs again (one more attempt
each, same payload and input files) and sends it back to brokerage. Each in one transaction,
the task's row locked first."""

from __future__ import annotations

from django.db import transaction

from brokerage import lifecycle
from brokerage.models import Task, TaskJob, TaskStatus
from core import clock
from matcher import services as job_services
from matcher.lifecycle import LIVE_STATES
from matcher.models import Job, JobStatus

UNSUCCESSFUL = (JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.CLOSED)
# A user's retry is not bound by TASK_MAX_ATTEMPT (the automatic retries' limit): the most
# attempts TaskJob.attempt holds.
MAX_USER_ATTEMPT = 32_767


class TaskActionError(Exception):
    """The task's state does not allow the action (answered 409)."""


def _lock(task_id: int) -> Task:
    return Task.objects.select_for_update().get(pk=task_id)


def _current_jobs(task: Task, states) -> list[int]:
    return sorted(
        TaskJob.objects.filter(
            task=task, reassigned=False, job__status__in=list(states)
        ).values_list("job_id", flat=True)
    )


def kill_task(task_id: int, user) -> Task:
    """Cancel every job of the task not ended yet; the task ends (finished when some jobs had
    finished, else failed)."""
    who = user.get_username()
    with transaction.atomic():
        task = _lock(task_id)
        if task.status in lifecycle.FINAL_TASK_STATES:
            raise TaskActionError(f"task {task.pk} has ended ({task.status}): nothing to kill")
        ids = _current_jobs(task, LIVE_STATES)
        visible = Job.objects.filter(task_job__task=task)
        out = job_services.act_on_jobs("kill", ids, user, visible)
        if out.refused:
            pk, why = min(out.refused.items())
            raise TaskActionError(f"job {pk} of task {task.pk}: {why}")
        lifecycle.finish_tasks([task.pk])
        task.refresh_from_db()
        if task.status not in lifecycle.FINAL_TASK_STATES:  # no job at all
            task.status = TaskStatus.FAILED
        task.status_reason = f"killed by {who}; {task.status_reason}"[:255]
        task.modified = clock.now()
        task.save(update_fields=["status", "status_reason", "modified"])
    return task


def retry_task(task_id: int, user) -> tuple[Task, int]:
    """Define the task's failed, cancelled and closed jobs again and send it back to brokerage.
    Returns the task and how many jobs it retries."""
    who = user.get_username()
    with transaction.atomic():
        task = _lock(task_id)
        if task.status not in (TaskStatus.FINISHED, TaskStatus.FAILED):
            raise TaskActionError(
                f"task {task.pk} is {task.status}: only a task that ended finished or failed "
                "(some jobs unsuccessful) is retried"
            )
        ids = _current_jobs(task, UNSUCCESSFUL)
        lifecycle.reassign(ids, MAX_USER_ATTEMPT, retried_by=who)
        waiting = task.kind == Task.Kind.PRODUCTION and task.nucleus_id is None
        task.status = TaskStatus.ASSIGNING if waiting else TaskStatus.READY
        brokerage = "task brokerage" if waiting else "job brokerage"
        task.status_reason = f"retried by {who}: {len(ids)} jobs; waiting for {brokerage}"
        task.retry_after = None
        task.modified = clock.now()
        task.save(update_fields=["status", "status_reason", "retry_after", "modified"])
    return task, len(ids)
