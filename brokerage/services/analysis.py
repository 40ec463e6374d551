"""The analysis brokerage cycle: usage and throttles, per-user queue statistics, the brokerage
itself with its retry without data locality, and the placement of the jobs."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from datetime import UTC, timedelta

from django.db import connection
from django.db.models import Count, Max, Q, Sum

from brokerage import analysis
from brokerage.models import (
    BrokerageRun,
    GlobalShare,
    Task,
    TaskDataset,
    TaskJob,
    TaskStatus,
    UserQuota,
)
from brokerage.production import Decision
from brokerage.services import world
from brokerage.services.placement import Placement, has_jobs_to_broker, run_fields
from core import clock, gdpconfig
from core.cycles import current_run_id, cycle
from matcher import job_counts
from matcher.lifecycle import (
    PRE_MATCH_STATES,
    QUEUED_OR_SENT_STATES,
    QUEUED_STATES,
    UNCANCELLED_FINAL_STATES,
    WAITING_TO_BROKER,
)
from matcher.models import Job, JobStatus, JobStatusHistory

ANALYSIS_PARAMS = (
    "CAP_RUNNING_USER_JOBS",
    "CAP_RUNNING_USER_CORES",
    "CAP_RUNNING_GROUP_JOBS",
    "CAP_RUNNING_GROUP_CORES",
    "USER_USAGE_THRESHOLD_A",
    "IO_INTENSITY_CUTOFF_USER",
    "DATA_CHECK_TIMEOUT_USER",
    "TW_DONE_JOB_STAT",
    "MIN_BAD_JOBS_TO_SKIP_PQ",
    "BASE_QUEUE_LENGTH_PER_PQ",
    "BASE_EXPECTED_WAIT_HOUR_ON_PQ",
    "BASE_DEFAULT_QUEUE_LENGTH_PER_PQ_USER",
    "BASE_QUEUE_RATIO_ON_PQ",
    "STATIC_MAX_QUEUE_RUNNING_RATIO",
    "MAX_EXPECTED_WAIT_HOUR",
    "ANALY_NEW_BASIC_WEIGHT",
    "ANALY_WEIGHT_EPSILON_1",
    "ANALY_WEIGHT_EPSILON_2",
)
QUEUED = QUEUED_OR_SENT_STATES
TRR_WINDOW_HOURS = 6


def analysis_params() -> dict:
    return {**world.job_params(), **{n: gdpconfig.get(n) for n in ANALYSIS_PARAMS}}


def _status_cores(jobs_qs, tasks_qs, jobs_counted=None) -> dict[str, tuple[int, int]]:
    """(jobs, cores) by status: a task's job has its task's coreCount, any other job one.
    `jobs_counted`: instead of jobs_qs, every job's count by status (the rollup's), of which
    the tasks' jobs are not the others."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for status, n, cores in (
        tasks_qs.values_list("job__status")
        .annotate(n=Count("pk"), cores=Sum("task__core_count"))
        .order_by()
    ):
        out[status][0] += n
        out[status][1] += cores or 0
    if jobs_counted is not None:
        for status, n in jobs_counted.items():
            others = max(0, n - out[status][0]) if status in out else n
            if others:
                out[status][0] += others
                out[status][1] += others
    if jobs_qs is not None:
        for status, n in (
            jobs_qs.exclude(pk__in=TaskJob.objects.values("job_id"))
            .values_list("status")
            .annotate(n=Count("pk"))
            .order_by()
        ):
            out[status][0] += n
            out[status][1] += n
    return {k: (v[0], v[1]) for k, v in out.items()}


def user_caps(user, queues: list, params: dict) -> tuple[analysis.Usage, list[tuple]]:
    """A user's analysis usage (the User Analysis share, no working group) and its caps:
    (usage, [(what, used, cap)])."""
    hi_sites = {q.site.name for q in queues if q.site_class == "hi"}
    usage = usage_of(Task(owner=user, gshare="User Analysis", working_group=""), hi_sites)
    caps = [
        ("running jobs", usage.running_jobs, params["CAP_RUNNING_USER_JOBS"]),
        ("queued jobs", usage.queued_jobs, 2 * params["CAP_RUNNING_USER_JOBS"]),
        ("running cores", usage.running_cores, params["CAP_RUNNING_USER_CORES"]),
        ("queued cores", usage.queued_cores, 2 * params["CAP_RUNNING_USER_CORES"]),
    ]
    return usage, caps


def usage_of(task: Task, hi_sites: set[str]) -> analysis.Usage:
    """The user's (or the working group's) jobs and cores, disk, and the User Analysis share."""
    states = [JobStatus.RUNNING, *QUEUED]
    if task.working_group:
        counts = _status_cores(
            None,
            TaskJob.objects.filter(task__working_group=task.working_group, job__status__in=states),
        )
    else:
        # The owner's jobs by state from the job counts' rollup, not from the jobs (a year of
        # them): the tasks' jobs among them are read from the live ones.
        counted = job_counts.by_status(None, owner_id=task.owner_id)
        counts = _status_cores(
            None,
            TaskJob.objects.filter(job__owner_id=task.owner_id, job__status__in=states),
            {s: n for s, n in counted.items() if s in states},
        )
    usage = analysis.Usage(
        running_jobs=counts.get(JobStatus.RUNNING, (0, 0))[0],
        running_cores=counts.get(JobStatus.RUNNING, (0, 0))[1],
        queued_jobs=sum(counts.get(s, (0, 0))[0] for s in QUEUED),
        queued_cores=sum(counts.get(s, (0, 0))[1] for s in QUEUED),
    )
    quota = UserQuota.objects.filter(user_id=task.owner_id).first()
    if quota is not None:
        usage.disk_used_gb, usage.disk_quota_gb = quota.disk_used_gb, quota.disk_quota_gb
    share = GlobalShare.objects.filter(name="User Analysis").first()
    if share is not None and share.target_pct > 0:
        running = _status_cores(
            Job.objects.filter(status=JobStatus.RUNNING),
            TaskJob.objects.filter(job__status=JobStatus.RUNNING),
        ).get(JobStatus.RUNNING, (0, 0))[1]
        ua = (
            TaskJob.objects.filter(
                job__status=JobStatus.RUNNING, task__gshare="User Analysis"
            ).aggregate(c=Sum("task__core_count"))["c"]
            or 0
        )
        usage.share_usage_pct = (100 * ua / running) / share.target_pct * 100 if running else 0.0
    running_at = job_counts.counts(
        None, ("site",), owner_id=task.owner_id, status=JobStatus.RUNNING
    )
    usage.hi_site_slots = sum(n for (site,), n in running_at.items() if site in hi_sites)
    return usage


def queue_owner_counts(queues) -> dict[tuple[int, int], Counter]:
    """Counts by state per (queue, job owner), attributed as world.queue_counts does."""
    out: dict[tuple[int, int], Counter] = defaultdict(Counter)
    for qid, owner, status, n in (
        TaskJob.objects.filter(job__status__in=PRE_MATCH_STATES, queue__isnull=False)
        .values_list("queue_id", "job__owner_id", "job__status")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        out[(qid, owner)][status] += n
    for qid, status, owner, n in world.matched_rows(("status", "owner_id")):
        out[(qid, owner)][status] += n
    return out


def to_running_rates(queues, now) -> dict[int, float]:
    """trr: jobs that started running per hour at each queue over the last 6 h (a brokered job
    at the queue its brokerage chose, any other at its site's default queue).

    The window is the hour bins of the job counts' rollup (matcher.job_counts): the current hour
    as far as it has gone and the TRR_WINDOW_HOURS - 1 before it, so that the starts are read
    per site from a few rollup rows, never from the jobs' status history; only the brokered
    jobs that changed state in the window are read one by one, for the queue they were
    brokered to."""
    if not queues:
        return {}
    hour = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    start = hour - timedelta(hours=TRR_WINDOW_HOURS - 1)
    hours = (now - start).total_seconds() / 3600
    default, site_of = world.site_queues()
    per_site: Counter = Counter()
    for (_hour, site, _status), n in job_counts.entered_per_hour(
        None, start, status=JobStatus.RUNNING
    ).items():
        per_site[site] += n
    started: Counter = Counter()
    for site, qid, n in _brokered_starts(start):
        if site_of.get(qid) == site and per_site[site] > 0:
            started[qid] += min(n, per_site[site])
            per_site[site] -= min(n, per_site[site])
    for site, n in per_site.items():
        if n > 0 and site in default:
            started[default[site]] += n
    return {q.pk: started.get(q.pk, 0) / hours for q in queues}


def _brokered_starts(since) -> list[tuple[str, int, int]]:
    """(site, brokered queue, starts) of the brokered jobs that entered running since then: read
    from the jobs that changed state since then (a job that started running since has), and
    their history rows from then on."""
    sql = f"""
        SELECT j.site, tj.queue_id, count(*)
        FROM {TaskJob._meta.db_table} tj
        JOIN {Job._meta.db_table} j ON j.id = tj.job_id
        JOIN {JobStatusHistory._meta.db_table} h
          ON h.job_id = j.id AND h.at >= %s AND h.to_status = %s
        WHERE tj.queue_id IS NOT NULL AND j.status_changed >= %s
        GROUP BY 1, 2
    """
    with connection.cursor() as cur:
        cur.execute(sql, [since, JobStatus.RUNNING, since])
        return cur.fetchall()


def task_done_counts(task, queues, now, hours: float) -> dict[int, Counter]:
    """The task's jobs that ended in the last `hours`, by the queue they were brokered to."""
    out: dict[int, Counter] = defaultdict(Counter)
    for qid, status, n in (
        TaskJob.objects.filter(
            task=task,
            queue__isnull=False,
            job__status__in=UNCANCELLED_FINAL_STATES,
            job__status_changed__gte=now - timedelta(hours=hours),
        )
        .values_list("queue_id", "job__status")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        out[qid][status] += n
    return out


def local_data(datasets, replicas, queues) -> dict[str, bool]:
    """Whether every input dataset has a complete replica at the queue's input storage."""
    out = {}
    for q in queues:
        ok = True
        for d in datasets:
            here = [r for r in replicas.get(d.pk, ()) if r.storage_id == q.input_storage_id]
            if not any(r.complete or (d.n_files and r.files >= d.n_files) for r in here):
                ok = False
                break
        out[q.name] = ok
    return out


def stabilizer_table(user_id: int, queues, owner_counts, trr, params) -> list[dict]:
    """The stabilizer per analysis queue for one user (the analysis page)."""
    users_at = Counter(qid for qid, _owner in owner_counts)
    rows = []
    for q in queues:
        if q.queue_type not in analysis.ANALYSIS_TYPES:
            continue
        user = owner_counts.get((q.pk, user_id), Counter())
        st = analysis.stabilizer(
            sum(q.counts.get(s, 0) for s in QUEUED_STATES),
            q.counts.get("running", 0),
            trr.get(q.pk, 0.0),
            sum(user.get(s, 0) for s in QUEUED_STATES),
            user.get("running", 0),
            users_at.get(q.pk, 0),
            params,
        )
        rows.append({"queue": q, **st})
    return rows


@cycle("analysis_brokerage")
def analysis_brokerage(rng=None, run_id=None, task_ids=None) -> dict:
    """Throttle or broker every analysis task with jobs waiting for brokerage."""
    rng = rng or random.Random()
    run_id = run_id or current_run_id("analysis_brokerage")
    now = clock.now()
    due = Task.objects.filter(kind=Task.Kind.ANALYSIS).filter(
        Q(status__in=(TaskStatus.READY, TaskStatus.RUNNING, TaskStatus.THROTTLED))
        | Q(status=TaskStatus.PENDING, retry_after__lte=now)
    )
    if task_ids is not None:
        due = due.filter(pk__in=task_ids)
    tasks = list(due.filter(has_jobs_to_broker()).order_by("-priority", "id"))
    if not tasks:
        return {"tasks": 0, "brokered": 0, "pending": 0, "throttled": 0, "jobs": 0}
    w = _AnalysisWorld(tasks, now)
    plan = Placement()
    for task in tasks:
        jobs = list(
            TaskJob.objects.filter(task=task, job__status__in=WAITING_TO_BROKER).values(
                "job_id", "n_events", "input_size_mb"
            )
        )
        held = analysis.throttle(task, usage_of(task, w.hi_sites), w.params)
        if held is not None:
            plan.runs.append(_throttled_run(task, held, plan, now, run_id))
            continue
        decision = _broker_with_retry(task, w.queues, w.context(task, jobs))
        if decision.chosen:
            for qid in plan.place(task, decision, jobs, w.by_name, rng):
                # The user's later tasks this cycle see these jobs queued at the queue.
                w.owner_counts[(qid, task.owner_id)]["activated"] += 1
            outcome = "assigned"
        else:
            plan.pending.append(task)
            outcome = "pending"
        plan.runs.append(
            run_fields(task, BrokerageRun.Kind.ANALYSIS, decision, outcome, now, run_id)
        )
    retry = timedelta(minutes=gdpconfig.get("ANALY_BROKERAGE_RETRY_MINUTES"))
    activated = plan.write(now, retry, "brokered by analysis brokerage")
    return {
        "tasks": len(plan.runs),
        "brokered": len(plan.brokered),
        "pending": len(plan.pending),
        "throttled": len(plan.throttled),
        "jobs": activated,
    }


class _AnalysisWorld:
    """What every task of one analysis-brokerage cycle is brokered against: the queues with
    their per-user counts and to-running rates, the parameters; and each task's context."""

    def __init__(self, tasks: list[Task], now):
        self.now = now
        self.queues = world.load_queues(now)
        self.by_name = {q.name: q for q in self.queues}
        self.params = analysis_params()
        self.owner_counts = queue_owner_counts(self.queues)
        self.users_at = Counter(qid for qid, _owner in self.owner_counts)
        self.trr = to_running_rates(self.queues, now)
        self.hi_sites = {q.site.name for q in self.queues if q.site_class == "hi"}
        self.all_tags = (gdpconfig.get("SOFTWARE_ALL") or {}).get("tags") or []
        self.last_success = dict(
            BrokerageRun.objects.filter(task__in=tasks, outcome="assigned")
            .values_list("task_id")
            .annotate(t=Max("at"))
            .order_by()
        )

    def context(self, task: Task, jobs: list[dict]) -> analysis.AnalysisContext:
        datasets = [
            td.dataset for td in TaskDataset.objects.filter(task=task).select_related("dataset")
        ]
        replicas = world.replicas_of([d.pk for d in datasets])
        return analysis.AnalysisContext(
            nucleus=None,
            links={},
            nucleus_queued_files=0,
            locality={},
            now=self.now,
            params=self.params,
            all_tags=self.all_tags,
            **world.job_sizes(datasets, jobs),
            user_counts={
                qid: c for (qid, owner), c in self.owner_counts.items() if owner == task.owner_id
            },
            n_users=self.users_at,
            trr=self.trr,
            task_done=task_done_counts(
                task, self.queues, self.now, self.params["TW_DONE_JOB_STAT"]
            ),
            local_data=local_data(datasets, replicas, self.queues),
            has_input=bool(datasets),
            last_success=self.last_success.get(task.pk),
            n_jobs=len(jobs),
        )


def _throttled_run(task: Task, held: dict, plan: Placement, now, run_id) -> dict:
    """A throttled task: held with its jobs, its run showing the throttle (no candidate)."""
    text = f"throttled: {held['throttle']}"
    plan.throttled.append((task, text))
    decision = Decision([], [], text)
    run = run_fields(task, BrokerageRun.Kind.ANALYSIS, decision, "throttled", now, run_id)
    run["removed_by"] = {"throttle": held}
    return run


def _broker_with_retry(task: Task, queues: list, ctx: analysis.AnalysisContext) -> Decision:
    """The brokerage, with the data-locality check when it applies; when persistent issues
    removed every queue, once more without that check."""
    with_locality = ctx.has_input and analysis.locality_suppressed(task, ctx) is None
    decision, persistent, _stab = analysis.broker_analysis(task, queues, ctx, with_locality)
    if not decision.chosen and persistent and with_locality:
        decision, _persistent, _stab = analysis.broker_analysis(task, queues, ctx, False)
        decision.message = (decision.message + "; " if decision.message else "") + (
            "retried without the data-locality check"
        )
    return decision
