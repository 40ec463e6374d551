"""Submitting a task: the Task with its architecture parsed once and stored, its input datasets,
and the jobs it generates (defined, waiting for brokerage). A task with a payload gives each job
that payload, its placeholders read for the job's number, and its input files, and routes the
jobs to the real pilots (docs/user-guide.md, Tasks that run real work)."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence

from django.core.files import File
from django.db import transaction

from brokerage import architecture
from brokerage.models import Dataset, PandaQueue, Task, TaskDataset, TaskJob, TaskStatus
from core import clock, gdpconfig
from matcher import services as job_services
from matcher.services.submission import routed_to_real_pilots
from sandboxes import services as sandboxes
from sandboxes.models import SandboxFile, SandboxKind
from sandboxes.uploads import sent_name

ANALYSIS_GSHARE = "User Analysis"  # an analysis task's share unless staff give another
# prun's sequence number: %RNDM:N reads N + the job's number (0, 1, ...).
SEQUENCE = re.compile(r"%RNDM:(\d{1,9})")
NO_REAL_PILOTS = (
    "no PanDA queue is served by real pilots (a queue whose CE offers a PayloadTags tag): "
    "a task with an executable names its queues in site or included_site"
)


class TaskRefused(Exception):
    """A task that cannot be stored as given: `field` names the cause."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


# --- the payload (pure) --------------------------------------------------------------------------


def sequence_problem(text: str) -> str | None:
    """A %RNDM not written %RNDM:N (N a whole number) would reach the job as it is."""
    if text.count("%RNDM") != len(SEQUENCE.findall(text)):
        return "write the job's sequence number as %RNDM:N (N + the job's number: 0, 1, ...)"
    return None


def numbered(text: str, n: int) -> str:
    return SEQUENCE.sub(lambda m: str(int(m.group(1)) + n), text)


def job_payload(task: Task, n: int) -> dict:
    """What job number `n` (0, 1, ...) of the task runs; {} when the task has no payload."""
    if not task.executable:
        return {}
    return {
        "executable": task.executable,
        "arguments": [numbered(a, n) for a in task.arguments],
        "environment": {k: numbered(v, n) for k, v in task.environment.items()},
        "output_sandbox": [numbered(p, n) for p in task.output_sandbox],
    }


# --- submission ----------------------------------------------------------------------------------


def real_pilot_queues() -> list[str]:
    """The PanDA queues whose CE offers a PayloadTags tag: the real pilots' queues."""
    tags = set(gdpconfig.get("PayloadTags"))
    queues = PandaQueue.objects.filter(computing_element__isnull=False).select_related(
        "computing_element"
    )
    return sorted(q.name for q in queues if tags & set(q.computing_element.tags or ()))


def _names_within(names: list[str], limit: int) -> str:
    """Comma-separated names, as many whole ones as fit in `limit` characters."""
    kept: list[str] = []
    for name in names:
        if len(",".join([*kept, name])) > limit:
            break
        kept.append(name)
    return ",".join(kept)


def submit_task(
    owner, fields: dict, inputs: list[tuple[Dataset, bool]], files: Sequence = ()
) -> Task:
    """Store a validated task and the jobs it generates (defined, waiting for brokerage).
    priority, task_class and gshare are given by staff only (TaskSubmitSerializer); otherwise
    the system's: the model's defaults, and an analysis task's share is User Analysis (the
    share whose throttle analysis tasks are subject to).

    The architecture is parsed once: the API's validation gives its result as
    `architecture_spec`; a caller without one (the demo, the simulated grid) has it parsed here
    (ArchitectureError when malformed). The brokers and the pages read only the stored form.

    A task with an executable that names no queues (site, included_site) goes to the real
    pilots' queues (TaskRefused when there are none); `files` (uploads, checked by
    sandboxes.check_inputs) are given to each of its jobs. All or nothing, files included."""
    now = clock.now()
    fields = {"setup": gdpconfig.get("DefaultSetup"), **fields}  # the grid's one Setup
    if fields.get("kind") == Task.Kind.ANALYSIS:
        fields.setdefault("gshare", ANALYSIS_GSHARE)
    if "architecture_spec" not in fields:
        fields["architecture_spec"] = architecture.parse(fields.get("architecture", ""))
    if files and not fields.get("executable"):
        raise TaskRefused("input_sandbox", "input files go with an executable to run")
    if fields.get("executable") and not (fields.get("site") or fields.get("included_site")):
        queues = real_pilot_queues()
        if not queues:
            raise TaskRefused("executable", NO_REAL_PILOTS)
        fields["site"] = _names_within(queues, Task._meta.get_field("site").max_length)
    fields["input_sandbox"] = [{"name": sent_name(f), "size": f.size} for f in files]
    written: list[str] = []
    try:
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
            jobs = _define_jobs(owner, task, inputs)
            for job in jobs:
                for upload in files:
                    upload.seek(0)
                    _store_input(job, sent_name(upload), upload, written)
    except BaseException:
        sandboxes.delete_stored(written)
        raise
    return task


def _define_jobs(owner, task: Task, inputs: list[tuple[Dataset, bool]]) -> list:
    """The task's n_jobs jobs, its master inputs' files and size shared out among them."""
    total_files = sum(d.n_files for d, m in inputs if m)
    total_mb = sum(d.size_gb for d, m in inputs if m) * 1024
    n = task.n_jobs
    jobs = job_services.define_jobs(
        owner,
        [
            routed_to_real_pilots(
                {
                    "owner_group": task.owner_group,
                    "name": f"{task.name}.{i + 1:06d}",
                    "setup": task.setup,
                    "cpu_time": task.job_cpu_time,
                    "user_priority": 1,
                    "current_priority": task.priority,
                    **job_payload(task, i),
                }
            )
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
    return jobs


# --- input files ---------------------------------------------------------------------------------


def _store_input(job, name: str, content, written: list[str]) -> SandboxFile:
    """One input file of a job, its bytes written through the sandboxes' storage (the name in
    `written`, for the caller to undo on a rollback)."""
    digest = hashlib.sha256()
    size = 0
    for chunk in iter(lambda: content.read(64 * 1024), b""):
        digest.update(chunk)
        size += len(chunk)
    content.seek(0)
    path = f"{job.pk % 1000:03d}/{job.pk}/{secrets.token_hex(16)}"
    stored = sandboxes.storage().save(path, File(content))
    written.append(stored)
    return SandboxFile.objects.create(
        job=job,
        kind=SandboxKind.INPUT,
        name=name,
        size=size,
        sha256=digest.hexdigest(),
        file=stored,
        complete=True,
        created=clock.now(),
    )


def copy_inputs(pairs: Sequence[tuple[int, object]]) -> list[str]:
    """Give each new job (a retry) the input files of the job it retries: [(old job id, new
    job)]. Returns the stored names written (undone by the caller on a rollback)."""
    written: list[str] = []
    by_old: dict[int, list[SandboxFile]] = {}
    for f in SandboxFile.objects.filter(
        job_id__in=[old for old, _ in pairs], kind=SandboxKind.INPUT
    ):
        by_old.setdefault(f.job_id, []).append(f)
    try:
        for old, new in pairs:
            for f in by_old.get(old, []):
                with f.file.open("rb") as content:
                    _store_input(new, f.name, content, written)
    except BaseException:
        sandboxes.delete_stored(written)
        raise
    return written


def task_outputs(task_id: int) -> list[SandboxFile]:
    """The output files (stdout, stderr, the output sandbox's) of the task's current jobs, shown
    once each job's final report arrived: by job, then kind and name."""
    return list(
        SandboxFile.objects.filter(
            job__task_job__task_id=task_id,
            job__task_job__reassigned=False,
            kind__in=sandboxes.OUTPUT_KINDS,
            complete=True,
        ).order_by("job_id", "kind", "name")
    )
