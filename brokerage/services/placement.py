"""What a brokerage cycle decided, written down: the tasks due, each decision's trace
(BrokerageRun), and the jobs placed at their queues with their tasks' new states, written at the
cycle's end in one transaction."""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from brokerage import production
from brokerage.models import BrokerageRun, Task, TaskJob, TaskStatus
from core import clock
from matcher import services as job_services
from matcher.lifecycle import WAITING_TO_BROKER
from matcher.models import JobStatus


def tasks_due(status_ready_q: Q, now) -> Q:
    return status_ready_q | Q(status=TaskStatus.PENDING, retry_after__lte=now)


def has_jobs_to_broker():
    """An EXISTS for Task rows: the task has jobs waiting for brokerage."""
    return Exists(TaskJob.objects.filter(task_id=OuterRef("pk"), job__status__in=WAITING_TO_BROKER))


def retry_at(at) -> str:
    # Marked simulated like every time the pages show; no "in 10 min": the reason is read later.
    return clock.label(at, "H:i", relative=False)


def store_run(task, kind, decision, outcome, now, run_id) -> BrokerageRun:
    return BrokerageRun.objects.create(**run_fields(task, kind, decision, outcome, now, run_id))


def run_fields(task, kind, decision, outcome, now, run_id) -> dict:
    """A BrokerageRun's fields: the decision, its trace and what removed the candidates."""
    return {
        "task": task,
        "kind": kind,
        "cycle_run": run_id,
        "at": now,
        "outcome": outcome,
        "chosen": decision.chosen,
        "message": decision.message[:255],
        "trace": BrokerageRun.encode_trace(decision.trace_rows()),
        "removed_by": decision.removed_by,
    }


class Placement:
    """What a brokerage cycle decided, written at its end in one transaction (a crash before
    leaves every task as it was; the next cycle decides again)."""

    def __init__(self):
        self.sites_by_job: dict[int, list[str]] = {}
        self.queue_by_job: dict[int, int] = {}
        self.runs: list[dict] = []
        self.brokered: list = []
        self.pending: list = []
        self.throttled: list = []

    def place(self, task, decision, jobs, by_name, rng) -> list[int]:
        """The jobs may run at the chosen queues' sites; each waits at one of those queues,
        drawn by weight (PanDA's per-job candidate choice)."""
        best = [by_name[name] for name in decision.chosen]
        weight_of = {c.name: c.weight for c in decision.candidates if not c.removed_by}
        weights = [(q.name, max(weight_of[q.name], 0.0)) for q in best]
        sites = list(dict.fromkeys(q.site.name for q in best))
        picks = []
        for j in jobs:
            pick = by_name[production.weighted_choice(weights, rng)]
            self.sites_by_job[j["job_id"]] = sites
            self.queue_by_job[j["job_id"]] = pick.pk
            # Later tasks in this cycle see these jobs waiting at the queue.
            pick.counts["activated"] += 1
            picks.append(pick.pk)
        self.brokered.append(task)
        return picks

    def write(self, now, retry, reason: str) -> int:
        with transaction.atomic():
            activated = job_services.activate_jobs(self.sites_by_job, reason)
            by_queue = defaultdict(list)
            for job_id, qid in self.queue_by_job.items():
                by_queue[qid].append(job_id)
            for qid, job_ids in by_queue.items():
                TaskJob.objects.filter(job_id__in=job_ids).update(queue_id=qid)
            self._write_tasks(now, retry)
            BrokerageRun.objects.bulk_create([BrokerageRun(**r) for r in self.runs], batch_size=200)
        return activated

    def _write_tasks(self, now, retry) -> None:
        if self.brokered:
            Task.objects.filter(pk__in=[t.pk for t in self.brokered]).update(
                status=TaskStatus.RUNNING,
                status_reason="jobs brokered",
                retry_after=None,
                modified=now,
            )
        if self.pending:
            Task.objects.filter(pk__in=[t.pk for t in self.pending]).update(
                status=TaskStatus.PENDING,
                status_reason=f"every queue was skipped; retry at {retry_at(now + retry)}",
                retry_after=now + retry,
                modified=now,
            )
        for task, reason_text in self.throttled:
            Task.objects.filter(pk=task.pk).update(
                status=TaskStatus.THROTTLED,
                status_reason=reason_text[:255],
                retry_after=None,
                modified=now,
            )
            job_services.set_waiting_status(
                TaskJob.objects.filter(task=task).values_list("job_id", flat=True),
                JobStatus.THROTTLED,
                reason_text,
            )
