"""Read-side queries shared by pages and API (no writes here)."""

from django.db.models import Count, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from matcher import job_counts, servability
from matcher.models import Job, JobStatus, TaskQueue, TaskQueueJob
from web.notifications import facts as notification_facts
from web.pilots import why as pilots_why
from web.sandboxes import facts as sandbox_facts


def taskqueues_with_counts(queryset=None):
    """TaskQueues annotated with their number of waiting jobs, counted per row shown (a
    correlated subquery), so a page of 50 TaskQueues does not aggregate a million members."""
    qs = TaskQueue.objects.all() if queryset is None else queryset
    count = (
        TaskQueueJob.objects.filter(task_queue=OuterRef("pk"))
        .order_by()
        .values("task_queue")
        .annotate(c=Count("*"))
        .values("c")
    )
    return qs.select_related("owner", "owner_group").annotate(
        waiting_jobs=Coalesce(Subquery(count, output_field=IntegerField()), Value(0))
    )


def jobs_by_priority(tq_id: int) -> list[dict]:
    rows = (
        TaskQueueJob.objects.filter(task_queue_id=tq_id)
        .order_by("-user_priority")
        .values("user_priority")
        .annotate(jobs=Count("*"))
    )
    return [{"user_priority": r["user_priority"], "jobs": r["jobs"]} for r in rows]


def jobs_by_status(queryset=None) -> dict[str, int]:
    qs = Job.objects.all() if queryset is None else queryset
    counts = dict(qs.order_by().values_list("status").annotate(n=Count("*")))
    return {s.value: counts.get(s.value, 0) for s in JobStatus if counts.get(s.value)}


def visible_jobs_by_status(user) -> dict[str, int]:
    """{state: jobs} the user may see, in the lifecycle's order, read from the job counts the
    mover keeps (matcher/job_counts.py), not counted over the job table."""
    counts = job_counts.by_status(user)
    return {s.value: counts[s.value] for s in JobStatus if counts.get(s.value)}


def feasibility_context():
    """The active CEs and live parameters the submission warnings compare jobs with."""
    from core import gdpconfig
    from matcher import dispatcher, feasibility

    backends = gdpconfig.get("SubmitPoolBackends")
    pools = set(gdpconfig.get("SubmitPools")) & set(backends)
    return feasibility.Context(
        ces=[res for _site, _ce, res in dispatcher.ce_resources()],
        submit_pools=frozenset(pools),
        default_setup=gdpconfig.get("DefaultSetup"),
        external_pools=frozenset(p for p in pools if backends[p] == "external"),
    )


def job_warnings(jobs, ctx=None) -> dict[int, list[str]]:
    """{job id: the requirements of that job no active CE offers ...}, computed once per
    distinct requirement set (a list of a thousand jobs usually holds a few)."""
    from core import gdpconfig
    from matcher import feasibility
    from matcher.models import MULTI_VALUED_FIELDS
    from matcher.taskqueues import cpu_segment

    ctx = ctx or feasibility_context()
    segments = gdpconfig.get("CPUSegments")
    seen: dict[tuple, list[str]] = {}
    out = {}
    for job in jobs:
        req = {f: tuple(getattr(job, f)) for f in MULTI_VALUED_FIELDS}
        key = (job.setup, job.cpu_time, *req.values())
        if key not in seen:
            segment = cpu_segment(job.cpu_time, segments)
            seen[key] = feasibility.warnings(job.setup, job.cpu_time, segment, req, ctx)
        out[job.pk] = seen[key]
    return out


# What the areas serving or holding a job's work know of a job or a TaskQueue, for their pages.
# A job fact is fn(user, job) -> context for the job's page: its notification request, its pilot,
# its sandbox files.
JOB_FACTS = (
    notification_facts.job_notification,
    pilots_why.job_pilot,
    sandbox_facts.sandbox_facts,
)
# A TaskQueue fact is fn(user, tq_id, past) -> context for its page (past: it was removed); a true
# "refers" says something still refers to that id. Its pilots, and whether any active CE serves it.
TASKQUEUE_FACTS = (
    pilots_why.taskqueue_pilots,
    servability.taskqueue_flag,
)


def facts_about_job(user, job: Job) -> dict:
    return {k: v for fn in JOB_FACTS for k, v in fn(user, job).items()}


def facts_about_taskqueue(user, tq_id: int, past: bool) -> dict:
    out: dict = {}
    for fn in TASKQUEUE_FACTS:
        facts = fn(user, tq_id, past)
        out["refers"] = out.get("refers", False) or facts.pop("refers", False)
        out.update(facts)
    return out
