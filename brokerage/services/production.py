"""The production brokerage cycles: task brokerage (a nucleus for every production task waiting
for one) and job brokerage (up to 10 queues for the jobs of every task ready for it)."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import timedelta

from django.db import transaction
from django.db.models import Max, Q

from brokerage import production
from brokerage.models import BrokerageRun, Task, TaskDataset, TaskJob, TaskStatus
from brokerage.services import world
from brokerage.services.placement import (
    Placement,
    has_jobs_to_broker,
    retry_at,
    run_fields,
    store_run,
    tasks_due,
)
from core import clock, gdpconfig
from core.cycles import current_run_id, cycle
from matcher.lifecycle import WAITING_TO_BROKER

# --- task brokerage ------------------------------------------------------------------------------


@cycle("task_brokerage")
def task_brokerage(rng=None, run_id=None) -> dict:
    """Assign a nucleus to every production task waiting for one."""
    rng = rng or random.Random()
    run_id = run_id or current_run_id("task_brokerage")
    now = clock.now()
    tasks = list(
        Task.objects.filter(kind=Task.Kind.PRODUCTION, nucleus__isnull=True)
        .filter(tasks_due(Q(status=TaskStatus.ASSIGNING), now))
        .select_related("parent__nucleus")
        .order_by("-priority", "id")
    )
    if not tasks:
        return {"tasks": 0, "assigned": 0, "pending": 0}
    nuclei = world.load_nuclei()
    params = world.task_params({t.gshare for t in tasks})
    groups = {n.name: {s.pk for s in n.storages_list} for n in nuclei}
    assigned = pending = 0
    retry = timedelta(minutes=gdpconfig.get("TASK_BROKERAGE_RETRY_MINUTES"))
    by_name = {n.name: n for n in nuclei}
    for task in tasks:
        datasets = world.task_inputs(task, task.task_broker_on_master)
        replicas = world.replicas_of([d.pk for d in datasets])
        loc = world.locality(datasets, replicas, groups)
        totals = (sum(d.size_gb for d in datasets), sum(d.n_files for d in datasets))
        parent = task.parent.nucleus if task.parent_id and task.parent.nucleus_id else None
        decision = production.broker_task(task, nuclei, loc, totals, params, rng, parent)
        with transaction.atomic():
            if decision.chosen:
                _assign_nucleus(task, by_name[decision.chosen[0]], now)
                outcome = "assigned"
                assigned += 1
            else:
                Task.objects.filter(pk=task.pk).update(
                    status=TaskStatus.PENDING,
                    status_reason=(
                        f"no nucleus: {decision.message}; retry at {retry_at(now + retry)}"
                    )[:255],
                    retry_after=now + retry,
                    modified=now,
                )
                outcome = "pending"
                pending += 1
            store_run(task, BrokerageRun.Kind.TASK, decision, outcome, now, run_id)
    return {"tasks": len(tasks), "assigned": assigned, "pending": pending}


def _assign_nucleus(task: Task, nucleus, now) -> None:
    Task.objects.filter(pk=task.pk).update(
        nucleus=nucleus,
        status=TaskStatus.READY,
        status_reason=f"assigned to nucleus {nucleus.name}",
        retry_after=None,
        modified=now,
    )
    # Its work now counts in the nucleus' RW for the next tasks of this cycle.
    nucleus.rw += task.n_jobs * task.n_events_per_job * task.cpu_time / world.CORE_DAY


# --- job brokerage -------------------------------------------------------------------------------


@cycle("job_brokerage")
def job_brokerage(rng=None, run_id=None, task_ids=None) -> dict:
    """Place the defined jobs of every task ready for it on up to 10 queues each."""
    rng = rng or random.Random()
    run_id = run_id or current_run_id("job_brokerage")
    now = clock.now()
    tasks = _tasks_for_job_brokerage(now, task_ids)
    if not tasks:
        return {"tasks": 0, "brokered": 0, "pending": 0, "jobs": 0}
    queues = world.load_queues(now)
    by_name = {q.name: q for q in queues}
    contexts = _JobContexts(tasks, queues, now)
    jobs_by_task, datasets_by_task, replicas = _waiting_jobs_and_inputs(tasks)
    plan = Placement()
    for task in tasks:
        jobs = jobs_by_task.get(task.pk)
        if not jobs:
            continue
        ctx = contexts.of(task, jobs, datasets_by_task.get(task.pk, []), replicas)
        decision = production.broker_jobs(task, queues, ctx)
        if decision.chosen:
            plan.place(task, decision, jobs, by_name, rng)
            outcome = "assigned"
        else:
            plan.pending.append(task)
            outcome = "pending"
        plan.runs.append(run_fields(task, BrokerageRun.Kind.JOB, decision, outcome, now, run_id))
    retry = timedelta(minutes=gdpconfig.get("JOB_BROKERAGE_RETRY_MINUTES"))
    activated = plan.write(now, retry, "brokered by job brokerage")
    return {
        "tasks": len(plan.runs),
        "brokered": len(plan.brokered),
        "pending": len(plan.pending),
        "jobs": activated,
    }


def _tasks_for_job_brokerage(now, task_ids) -> list[Task]:
    """The production tasks ready (or due again) with jobs waiting for brokerage, highest
    priority first, at most JOB_BROKERAGE_MAX_TASKS of them."""
    due = Task.objects.filter(kind=Task.Kind.PRODUCTION).filter(
        tasks_due(Q(status__in=(TaskStatus.READY, TaskStatus.RUNNING)), now)
    )
    if task_ids is not None:
        due = due.filter(pk__in=task_ids)
    due = (
        due.filter(has_jobs_to_broker())
        .select_related("nucleus", "owner_group")
        .order_by("-priority", "id")
    )
    return list(due[: gdpconfig.get("JOB_BROKERAGE_MAX_TASKS")])


def _waiting_jobs_and_inputs(tasks) -> tuple[dict, dict, dict]:
    """Per task, its jobs waiting for brokerage and its input datasets; and their replicas."""
    jobs_by_task = defaultdict(list)
    for tj in TaskJob.objects.filter(task__in=tasks, job__status__in=WAITING_TO_BROKER).values(
        "job_id", "task_id", "n_events", "input_size_mb"
    ):
        jobs_by_task[tj["task_id"]].append(tj)
    datasets_by_task = defaultdict(list)
    for td in TaskDataset.objects.filter(task__in=tasks).select_related("dataset"):
        datasets_by_task[td.task_id].append(td.dataset)
    replicas = world.replicas_of({d.pk for ds in datasets_by_task.values() for d in ds})
    return jobs_by_task, datasets_by_task, replicas


class _JobContexts:
    """What every task of one job-brokerage cycle is brokered against (the parameters, the
    network, the nuclei, the memoised verdicts), and each task's JobContext from it."""

    def __init__(self, tasks: list[Task], queues: list, now):
        self.now = now
        self.params = world.job_params()
        self.links, self.nucleus_queued = world.load_links()
        self.nuclei = (
            {n.pk: n for n in world.load_nuclei()} if any(t.nucleus_id for t in tasks) else {}
        )
        self.queue_groups = {
            q.name: {q.input_storage_id} if q.input_storage_id else set() for q in queues
        }
        self.all_tags = (gdpconfig.get("SOFTWARE_ALL") or {}).get("tags") or []
        self.memo: dict = {}
        self.expired = _preassignment_expired(tasks, now)

    def of(self, task: Task, jobs: list[dict], datasets: list, replicas) -> production.JobContext:
        return production.JobContext(
            nucleus=self.nuclei.get(task.nucleus_id),
            links=self.links.get(task.nucleus_id, {}),
            nucleus_queued_files=self.nucleus_queued.get(task.nucleus_id, 0),
            locality=world.locality(datasets, replicas, self.queue_groups) if datasets else {},
            now=self.now,
            params=self.params,
            all_tags=self.all_tags,
            memo=self.memo,
            preassignment_expired=task.pk in self.expired,
            **world.job_sizes(datasets, jobs),
        )


def _preassignment_expired(tasks: list[Task], now) -> set[int]:
    """The merge tasks whose pre-assigned queues have not taken their jobs for 24 h (since
    their last successful job brokerage, or their creation): PanDA then ignores the
    pre-assignment."""
    merges = [t for t in tasks if t.merge and t.site]
    if not merges:
        return set()
    placed_last = dict(
        BrokerageRun.objects.filter(
            task_id__in=[t.pk for t in merges], kind=BrokerageRun.Kind.JOB, outcome="assigned"
        )
        .values_list("task_id")
        .annotate(t=Max("at"))
        .order_by()
    )
    return {t.pk for t in merges if now - placed_last.get(t.pk, t.created) >= timedelta(hours=24)}
