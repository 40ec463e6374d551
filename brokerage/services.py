"""Brokerage operations: submitting tasks, loading the world the pure brokers read, running the
task- and job-brokerage cycles, and storing their traces."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, F, Max, Q, Sum

from brokerage import architecture, production
from brokerage.models import (
    BrokerageRun,
    Dataset,
    NetworkLink,
    Nucleus,
    PandaQueue,
    Replica,
    Storage,
    Task,
    TaskDataset,
    TaskJob,
    TaskStatus,
)
from brokerage.network import LinkData
from config import clock, gdpconfig
from config.cycles import current_run_id, cycle
from matcher import services as job_services
from matcher.lifecycle import (
    CLAIMED_STATES,
    PRE_MATCH_STATES,
    STARTED_STATES,
    WAITING_TO_BROKER,
)
from matcher.models import FINAL_STATES, Job, JobStatus, Pilot, PilotStatus

LIVE_PILOT_STATES = (
    PilotStatus.SUBMITTED,
    PilotStatus.READY,
    PilotStatus.SCHEDULED,
    PilotStatus.WAITING,
    PilotStatus.RUNNING,
)
CORE_DAY = 10 * 86400  # HS06 s of one 10-HS06 core for a day
ANALYSIS_GSHARE = "User Analysis"  # an analysis task's share unless staff give another
TASK_PARAMS = (
    "DISK_THRESHOLD",
    "FREE_DISK_CUTOFF",
    "INPUT_SIZE_THRESHOLD",
    "INPUT_SIZE_FRACTION",
    "INPUT_NUM_THRESHOLD",
    "INPUT_NUM_FRACTION",
    "MIN_IO_INTENSITY_WITH_LOCAL_DATA",
    "MIN_INPUT_SIZE_WITH_LOCAL_DATA",
    "MAX_TASK_PRIO_WITH_LOCAL_DATA",
)
JOB_PARAMS = (
    "NQUEUED_SAT_CAP",
    "NQUEUED_NUC_CAP_FOR_JOBS",
    "IO_INTENSITY_CUTOFF",
    "SIZE_CUTOFF_TO_MOVE_INPUT",
    "NUM_CUTOFF_TO_MOVE_INPUT",
    "MAX_DISKIO_DEFAULT",
    "NW_THRESHOLD",
    "NW_WEIGHT_MULTIPLIER",
    "NW_QUEUE_IMPORTANCE",
    "WORK_SHORTAGE",
    "STORAGE_MIN_FREE_SIZE",
)


def task_params(gshares=()) -> dict:
    params = {name: gdpconfig.get(name) for name in TASK_PARAMS}
    per_share = {}
    for g in gshares:
        value = gdpconfig.family_value("DISK_THRESHOLD_<gshare>", g)
        if value is not None:
            per_share[g] = value
    params["DISK_THRESHOLD_PER_GSHARE"] = per_share
    return params


def job_params() -> dict:
    return {name: gdpconfig.get(name) for name in JOB_PARAMS}


# --- submission ------------------------------------------------------------------------------


def submit_task(owner, fields: dict, inputs: list[tuple[Dataset, bool]]) -> Task:
    """Store a validated task and the jobs it generates (defined, waiting for brokerage).
    priority, task_class and gshare are given by staff only (TaskSubmitSerializer); otherwise
    the system's: the model's defaults, and an analysis task's share is User Analysis (the
    share whose throttle analysis tasks are subject to)."""
    now = clock.now()
    fields = {"setup": gdpconfig.get("DefaultSetup"), **fields}  # the grid's one Setup
    if fields.get("kind") == Task.Kind.ANALYSIS:
        fields.setdefault("gshare", ANALYSIS_GSHARE)
    with transaction.atomic():
        task = Task(owner=owner, created=now, modified=now, **fields)
        task.architecture_spec = architecture.parse(task.architecture)
        if task.kind == Task.Kind.PRODUCTION and task.nucleus_id is None:
            task.status, task.status_reason = TaskStatus.ASSIGNING, "waiting for task brokerage"
        else:
            task.status, task.status_reason = TaskStatus.READY, "waiting for job brokerage"
        task.save()
        TaskDataset.objects.bulk_create(
            [TaskDataset(task=task, dataset=d, master=m) for d, m in inputs]
        )
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
    return task


# --- the world as the brokers read it ------------------------------------------------------------


def queue_counts() -> dict[int, Counter]:
    """Job counts by state per queue, from our jobs: waiting jobs count at the queue their
    brokerage chose, matched ones at a queue of the site they went to."""
    counts: dict[int, Counter] = defaultdict(Counter)
    pre = (
        TaskJob.objects.filter(job__status__in=PRE_MATCH_STATES, queue__isnull=False)
        .values_list("queue_id", "job__status")
        .annotate(n=Sum(1))
        .order_by()
    )
    for qid, status, n in pre:
        counts[qid][status] += n
    for qid, status, n in matched_rows(("status",)):
        counts[qid][status] += n
    return counts


def site_queues() -> tuple[dict[str, int], dict[int, str]]:
    """Each site's default queue (its first production queue, else its first queue) and each
    queue's site: matched jobs without a brokered queue count at the default one."""
    default: dict[str, int] = {}
    site_of: dict[int, str] = {}
    rows = PandaQueue.objects.values_list("pk", "site__name", "queue_type").order_by("name")
    for qid, site, _type in sorted(rows, key=lambda r: r[2] == PandaQueue.Type.ANALYSIS):
        default.setdefault(site, qid)
        site_of[qid] = site
    return default, site_of


def queue_of_match(site: str, brokered: int | None, default, site_of) -> int | None:
    """The queue a matched job counts at: the one its brokerage chose if it ran at that
    queue's site, else its site's default queue (see site_queues)."""
    if brokered is not None and site_of.get(brokered) == site:
        return brokered
    return default.get(site)


def brokered_queue(job_ref: str = "job_id"):
    """A subquery: the queue the brokerage chose for the row's job (None for other jobs)."""
    from django.db.models import OuterRef, Subquery

    return Subquery(TaskJob.objects.filter(job_id=OuterRef(job_ref)).values("queue_id")[:1])


def matched_rows(extra: tuple[str, ...]):
    """(queue id, *extra values, n) for the matched jobs: a brokered job counts at the queue
    its brokerage chose when it went to that queue's site, any other at its site's default."""

    default, site_of = site_queues()
    rows = (
        Job.objects.filter(status__in=CLAIMED_STATES)
        .annotate(brokered=brokered_queue("pk"))
        .values_list("site", "brokered", *extra)
        .annotate(n=Count("pk"))
        .order_by()
    )
    for site, brokered, *values, n in rows:
        qid = queue_of_match(site, brokered, default, site_of)
        if qid is None:
            continue
        values = ["starting" if v == JobStatus.SENT else v for v in values]
        yield (qid, *values, n)


def load_queues(now=None) -> list[PandaQueue]:
    """Every queue with its storages, its job counts, its live pilots and last activity."""
    now = now or clock.now()
    queues = list(
        PandaQueue.objects.select_related("site", "nucleus", "input_storage", "output_storage")
    )
    counts = queue_counts()
    pilots = Counter(
        dict(
            Pilot.objects.filter(status__in=LIVE_PILOT_STATES)
            .values_list("site")
            .annotate(n=Sum(1))
            .order_by()
        )
    )
    last_pilot = dict(
        Pilot.objects.exclude(site="")
        .values_list("site")
        .annotate(t=Max("status_changed"))
        .order_by()
    )
    last_start = dict(
        Job.objects.filter(status__in=STARTED_STATES)
        .values_list("site")
        .annotate(t=Max("status_changed"))
        .order_by()
    )
    for q in queues:
        q.counts = counts.get(q.pk, Counter())
        q.n_batch_jobs = pilots.get(q.site.name, 0)
        q.last_pilot = _later(q.last_pilot, last_pilot.get(q.site.name))
        q.last_start = _later(q.last_start, last_start.get(q.site.name))
    return queues


def _later(a, b):
    return max(x for x in (a, b) if x is not None) if (a or b) else None


def load_nuclei() -> list[Nucleus]:
    nuclei = list(Nucleus.objects.select_related("site"))
    storages = defaultdict(list)
    for s in Storage.objects.filter(nucleus__isnull=False):
        storages[s.nucleus_id].append(s)
    rw = remaining_work()
    for n in nuclei:
        n.storages_list = storages.get(n.pk, [])
        n.rw = rw.get(n.pk, 0.0)
    return nuclei


def remaining_work() -> dict[int, float]:
    """RW per nucleus: events × cpuTime of its tasks' unfinished jobs, in 10-HS06 core-days."""
    rows = (
        TaskJob.objects.filter(task__nucleus__isnull=False)
        .exclude(job__status__in=FINAL_STATES)
        .values_list("task__nucleus_id")
        .annotate(work=Sum(F("n_events") * F("task__cpu_time")))
        .order_by()
    )
    return {nid: (work or 0) / CORE_DAY for nid, work in rows}


def replicas_of(dataset_ids) -> dict[int, list[Replica]]:
    out = defaultdict(list)
    for r in Replica.objects.filter(dataset_id__in=dataset_ids).select_related("storage"):
        out[r.dataset_id].append(r)
    return out


def task_inputs(task: Task, master_only: bool) -> list[Dataset]:
    rows = task.inputs.select_related("dataset")
    if master_only:
        rows = rows.filter(master=True)
    return [r.dataset for r in rows]


def locality(
    datasets, replicas, storage_groups: dict[str, set[int]]
) -> dict[str, production.Locality]:
    """What each group of storages (a nucleus' or a queue's) holds of these datasets; a
    dataset held twice in one group counts once."""
    out = {}
    for name, storage_ids in storage_groups.items():
        loc = production.Locality()
        for d in datasets:
            best_any, best_disk, files = 0.0, 0.0, 0
            for r in replicas.get(d.pk, ()):
                if r.storage_id in storage_ids:
                    best_any = max(best_any, r.size_gb)
                    files = max(files, r.files)
                    if not r.storage.is_tape:
                        best_disk = max(best_disk, r.size_gb)
            loc.size_any += best_any
            loc.size_disk += best_disk
            loc.files_any += files
        out[name] = loc
    return out


# --- task brokerage ------------------------------------------------------------------------------


def tasks_due(status_ready_q: Q, now) -> Q:
    return status_ready_q | Q(status=TaskStatus.PENDING, retry_after__lte=now)


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
    nuclei = load_nuclei()
    params = task_params({t.gshare for t in tasks})
    groups = {n.name: {s.pk for s in n.storages_list} for n in nuclei}
    assigned = pending = 0
    retry = timedelta(minutes=gdpconfig.get("TASK_BROKERAGE_RETRY_MINUTES"))
    by_name = {n.name: n for n in nuclei}
    for task in tasks:
        datasets = task_inputs(task, task.task_broker_on_master)
        replicas = replicas_of([d.pk for d in datasets])
        loc = locality(datasets, replicas, groups)
        totals = (sum(d.size_gb for d in datasets), sum(d.n_files for d in datasets))
        parent = task.parent.nucleus if task.parent_id and task.parent.nucleus_id else None
        decision = production.broker_task(task, nuclei, loc, totals, params, rng, parent)
        with transaction.atomic():
            if decision.chosen:
                nucleus = by_name[decision.chosen[0]]
                Task.objects.filter(pk=task.pk).update(
                    nucleus=nucleus,
                    status=TaskStatus.READY,
                    status_reason=f"assigned to nucleus {nucleus.name}",
                    retry_after=None,
                    modified=now,
                )
                outcome = "assigned"
                assigned += 1
                # Its work now counts in the nucleus' RW for the next tasks of this cycle.
                nucleus.rw += task.n_jobs * task.n_events_per_job * task.cpu_time / CORE_DAY
            else:
                Task.objects.filter(pk=task.pk).update(
                    status=TaskStatus.PENDING,
                    status_reason=(
                        f"no nucleus: {decision.message}; retry at {_retry_at(now + retry)}"
                    )[:255],
                    retry_after=now + retry,
                    modified=now,
                )
                outcome = "pending"
                pending += 1
            _store_run(task, BrokerageRun.Kind.TASK, decision, outcome, now, run_id)
    return {"tasks": len(tasks), "assigned": assigned, "pending": pending}


def _retry_at(at) -> str:
    # Marked simulated like every time the pages show; no "in 10 min": the reason is read later.
    return clock.label(at, "H:i", relative=False)


def _store_run(task, kind, decision, outcome, now, run_id) -> BrokerageRun:
    return BrokerageRun.objects.create(**_run_fields(task, kind, decision, outcome, now, run_id))


def _run_fields(task, kind, decision, outcome, now, run_id) -> dict:
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


# --- job brokerage -------------------------------------------------------------------------------


def load_links() -> tuple[dict[int, dict[int, LinkData]], dict[int, int]]:
    links: dict[int, dict[int, LinkData]] = defaultdict(dict)
    queued: Counter = Counter()
    for link in NetworkLink.objects.all():
        links[link.nucleus_id][link.source_id] = LinkData(
            link.queued_files, link.mbps_1h, link.mbps_1d, link.mbps_1w, link.closeness
        )
        queued[link.nucleus_id] += link.queued_files or 0
    return links, queued


@cycle("job_brokerage")
def job_brokerage(rng=None, run_id=None, task_ids=None) -> dict:
    """Place the defined jobs of every task ready for it on up to 10 queues each."""
    rng = rng or random.Random()
    run_id = run_id or current_run_id("job_brokerage")
    now = clock.now()
    due = Task.objects.filter(kind=Task.Kind.PRODUCTION).filter(
        tasks_due(Q(status__in=(TaskStatus.READY, TaskStatus.RUNNING)), now)
    )
    if task_ids is not None:
        due = due.filter(pk__in=task_ids)
    due = (
        due.filter(_has_jobs_to_broker())
        .select_related("nucleus", "owner_group")
        .order_by("-priority", "id")
    )
    tasks = list(due[: gdpconfig.get("JOB_BROKERAGE_MAX_TASKS")])
    if not tasks:
        return {"tasks": 0, "brokered": 0, "pending": 0, "jobs": 0}
    queues = load_queues(now)
    params = job_params()
    links, nucleus_queued = load_links()
    nuclei = {n.pk: n for n in load_nuclei()} if any(t.nucleus_id for t in tasks) else {}
    queue_groups = {q.name: {q.input_storage_id} if q.input_storage_id else set() for q in queues}
    all_tags = (gdpconfig.get("SOFTWARE_ALL") or {}).get("tags") or []
    by_name = {q.name: q for q in queues}

    jobs_by_task = defaultdict(list)
    for tj in TaskJob.objects.filter(task__in=tasks, job__status__in=WAITING_TO_BROKER).values(
        "job_id", "task_id", "n_events", "input_size_mb"
    ):
        jobs_by_task[tj["task_id"]].append(tj)
    datasets_by_task = defaultdict(list)
    for td in TaskDataset.objects.filter(task__in=tasks).select_related("dataset"):
        datasets_by_task[td.task_id].append(td.dataset)
    replicas = replicas_of({d.pk for ds in datasets_by_task.values() for d in ds})

    memo: dict = {}
    plan = Placement()
    merges = [t.pk for t in tasks if t.merge and t.site]
    placed_last = (
        dict(
            BrokerageRun.objects.filter(
                task_id__in=merges, kind=BrokerageRun.Kind.JOB, outcome="assigned"
            )
            .values_list("task_id")
            .annotate(t=Max("at"))
            .order_by()
        )
        if merges
        else {}
    )
    for task in tasks:
        jobs = jobs_by_task.get(task.pk)
        if not jobs:
            continue
        datasets = datasets_by_task.get(task.pk, [])
        nucleus = nuclei.get(task.nucleus_id)
        ctx = production.JobContext(
            nucleus=nucleus,
            links=links.get(task.nucleus_id, {}),
            nucleus_queued_files=nucleus_queued.get(task.nucleus_id, 0),
            locality=locality(datasets, replicas, queue_groups) if datasets else {},
            now=now,
            params=params,
            all_tags=all_tags,
            memo=memo,
            preassignment_expired=task.pk in merges
            and now - placed_last.get(task.pk, task.created) >= timedelta(hours=24),
            **job_sizes(datasets, jobs),
        )
        decision = production.broker_jobs(task, queues, ctx)
        if decision.chosen:
            plan.place(task, decision, jobs, by_name, rng)
            outcome = "assigned"
        else:
            plan.pending.append(task)
            outcome = "pending"
        plan.runs.append(_run_fields(task, BrokerageRun.Kind.JOB, decision, outcome, now, run_id))
    retry = timedelta(minutes=gdpconfig.get("JOB_BROKERAGE_RETRY_MINUTES"))
    activated = plan.write(now, retry, "brokered by job brokerage")
    return {
        "tasks": len(plan.runs),
        "brokered": len(plan.brokered),
        "pending": len(plan.pending),
        "jobs": activated,
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
                    status_reason=f"every queue was skipped; retry at {_retry_at(now + retry)}",
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
            BrokerageRun.objects.bulk_create([BrokerageRun(**r) for r in self.runs], batch_size=200)
        return activated


def job_sizes(datasets, jobs) -> dict:
    """The input totals and the per-job sizes the checks compare (the smallest events per job
    and the largest input)."""
    return {
        "totals": (sum(d.size_gb for d in datasets), sum(d.n_files for d in datasets)),
        "n_events": min(j["n_events"] for j in jobs),
        "input_mb_per_job": max(j["input_size_mb"] for j in jobs),
    }


def _has_jobs_to_broker():
    from django.db.models import Exists, OuterRef

    return Exists(TaskJob.objects.filter(task_id=OuterRef("pk"), job__status__in=WAITING_TO_BROKER))
