"""Submitting a task: the Task with its architecture parsed once and stored, its input datasets,
and the jobs it generates (defined, waiting for brokerage)."""

from __future__ import annotations

from django.db import transaction

from brokerage import architecture
from brokerage.models import Dataset, Task, TaskDataset, TaskJob, TaskStatus
from core import clock, gdpconfig
from matcher import services as job_services

ANALYSIS_GSHARE = "User Analysis"  # an analysis task's share unless staff give another


def submit_task(owner, fields: dict, inputs: list[tuple[Dataset, bool]]) -> Task:
    """Store a validated task and the jobs it generates (defined, waiting for brokerage).
    priority, task_class and gshare are given by staff only (TaskSubmitSerializer); otherwise
    the system's: the model's defaults, and an analysis task's share is User Analysis (the
    share whose throttle analysis tasks are subject to).

    The architecture is parsed once: the API's validation gives its result as
    `architecture_spec`; a caller without one (the demo, the simulated grid) has it parsed here
    (ArchitectureError when malformed). The brokers and the pages read only the stored form."""
    now = clock.now()
    fields = {"setup": gdpconfig.get("DefaultSetup"), **fields}  # the grid's one Setup
    if fields.get("kind") == Task.Kind.ANALYSIS:
        fields.setdefault("gshare", ANALYSIS_GSHARE)
    if "architecture_spec" not in fields:
        fields["architecture_spec"] = architecture.parse(fields.get("architecture", ""))
    with transaction.atomic():
        task = Task(owner=owner, created=now, modified=now, **fields)
        if task.kind == Task.Kind.PRODUCTION and task.nucleus_id is None:
            task.status, task.status_reason = TaskStatus.ASSIGNING, "waiting for task brokerage"
        else:
            task.status, task.status_reason = TaskStatus.READY, "waiting for job brokerage"
        task.save()
        TaskDataset.objects.bulk_create(
            [TaskDataset(task=task, dataset=d, master=m) for d, m in inputs]
        )
        _define_jobs(owner, task, inputs)
    return task


def _define_jobs(owner, task: Task, inputs: list[tuple[Dataset, bool]]) -> None:
    """The task's n_jobs jobs, its master inputs' files and size shared out among them."""
    total_files = sum(d.n_files for d, m in inputs if m)
    total_mb = sum(d.size_gb for d, m in inputs if m) * 1024
    n = task.n_jobs
    jobs = job_services.define_jobs(
        owner,
        [
            {
                "owner_group": task.owner_group,
                "name": f"{task.name}.{i + 1:06d}",
                "setup": task.setup,
                "cpu_time": task.job_cpu_time,
                "user_priority": 1,
                "current_priority": task.priority,
            }
            for i in range(n)
        ],
        reason=f"defined by task {task.pk}",
    )
    TaskJob.objects.bulk_create(
        [
            TaskJob(
                job=j,
                task=task,
                n_events=task.n_events_per_job,
                input_files=total_files // n + (1 if i < total_files % n else 0),
                input_size_mb=total_mb / n,
            )
            for i, j in enumerate(jobs)
        ]
    )
