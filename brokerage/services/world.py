"""The world as the pure brokers read it: the queues with their job counts and pilots, the
nuclei with their storages and remaining work, the network links, the replicas and what each
group of storages holds of a task's input, and the brokerage parameters."""

from __future__ import annotations

from collections import Counter, defaultdict

from django.db.models import Count, F, Max, Sum

from brokerage import analysis, production
from brokerage.models import (
    Dataset,
    NetworkLink,
    Nucleus,
    PandaQueue,
    Replica,
    Storage,
    Task,
    TaskJob,
)
from brokerage.network import LinkData
from core import clock, gdpconfig
from matcher import site_mask
from matcher.lifecycle import CLAIMED_STATES, PRE_MATCH_STATES, QUEUED_STATES, STARTED_STATES
from matcher.models import FINAL_STATES, Job, JobStatus
from pilots.models import Pilot, PilotStatus

LIVE_PILOT_STATES = (
    PilotStatus.SUBMITTED,
    PilotStatus.READY,
    PilotStatus.SCHEDULED,
    PilotStatus.WAITING,
    PilotStatus.RUNNING,
)
CORE_DAY = 10 * 86400  # HS06 s of one 10-HS06 core for a day
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


# --- queues --------------------------------------------------------------------------------------


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
        PandaQueue.objects.select_related(
            "site", "nucleus", "input_storage", "output_storage", "computing_element"
        )
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
    on_demand = on_demand_pilot_tags()
    for q in queues:
        q.counts = counts.get(q.pk, Counter())
        ce = q.computing_element
        q.masked = site_mask.masked_reason(q.site.status, ce.status if ce else None)
        q.pilots_on_demand = bool(ce is not None and on_demand & set(ce.tags or ()))
        q.n_batch_jobs = pilots.get(q.site.name, 0)
        q.last_pilot = _later(q.last_pilot, last_pilot.get(q.site.name))
        q.last_start = _later(q.last_start, last_start.get(q.site.name))
    return queues


def on_demand_pilot_tags() -> set[str]:
    """The CE tags whose queues get pilots on demand: the PayloadTags, when a PayloadSubmitPools
    pool has a local backend (SubmitPoolBackends), whose director starts real pilots at such a CE
    for the jobs waiting there. Empty when no such pool: those pilots then come from elsewhere."""
    backends = gdpconfig.get("SubmitPoolBackends")
    pools = gdpconfig.get("PayloadSubmitPools")
    if not any(backends.get(pool) in ("local", "panda") for pool in pools):
        return set()
    return set(gdpconfig.get("PayloadTags"))


def queue_standing(q) -> dict:
    """A loaded queue's numbers as every page shows them (load_queues): its running jobs (those
    counted at it), its queued ones (PanDA's nQueue: defined, assigned, activated, starting),
    the live pilots at its site, the running figure the production weight uses (the largest of
    running, min(pilots, 20), numSlots: production.effective_running) and, for an analysis
    queue, the queue length past which the analysis brokerage skips it."""
    running = q.counts.get(JobStatus.RUNNING, 0)
    used, source = production.effective_running(q)
    analysis_queue = q.queue_type in analysis.ANALYSIS_TYPES
    return {
        "running": running,
        "queued": sum(q.counts.get(s, 0) for s in QUEUED_STATES),
        "pilots": q.n_batch_jobs,
        "running_used": used,
        "running_from": source,
        "queue_length_limit": analysis.queue_length_limit(running) if analysis_queue else None,
    }


def _later(a, b):
    return max(x for x in (a, b) if x is not None) if (a or b) else None


# --- nuclei and links ----------------------------------------------------------------------------


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


def load_links() -> tuple[dict[int, dict[int, LinkData]], dict[int, int]]:
    links: dict[int, dict[int, LinkData]] = defaultdict(dict)
    queued: Counter = Counter()
    for link in NetworkLink.objects.all():
        links[link.nucleus_id][link.source_id] = LinkData(
            link.queued_files, link.mbps_1h, link.mbps_1d, link.mbps_1w, link.closeness
        )
        queued[link.nucleus_id] += link.queued_files or 0
    return links, queued


# --- a task's input ------------------------------------------------------------------------------


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


def job_sizes(datasets, jobs) -> dict:
    """The input totals and the per-job sizes the checks compare (the smallest events per job
    and the largest input)."""
    return {
        "totals": (sum(d.size_gb for d in datasets), sum(d.n_files for d in datasets)),
        "n_events": min(j["n_events"] for j in jobs),
        "input_mb_per_job": max(j["input_size_mb"] for j in jobs),
    }
