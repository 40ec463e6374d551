"""The timeouts cycle (every 5 minutes): scan the jobs once for every rule, act in bulk.

A job's queue: for matched states (sent … transferring) the default queue of the site it was
matched at (its first production queue by name, `brokerage.services.world`); for waiting
states its
TaskJob.queue. A plain DIRAC job waiting in a TaskQueue has no queue: only the rules that need
none apply to it.

The cycle is set-based: one aggregate query (job starts per site and the task jobs that fast
rebrokerage counts), one scan whose WHERE is the OR of every rule's (state, age)
condition with the paused / disableReassign queues left out, then a handful of bulk statements
for the actions (`timeouts.actions`). Python only sees the candidates, and `timeouts.rules.fired`
decides which rule each one hit.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Case, IntegerField, Max, Q, Value, When
from django.db.models.functions import Coalesce

from brokerage.models import PandaQueue, Task, TaskJob
from brokerage.services.world import site_queues
from core import clock, gdpconfig
from core.cycles import current_run_id, cycle
from core.db import among
from matcher.lifecycle import AT_WORK_STATES, CLAIMED_STATES, WAITING_STATES
from matcher.models import Job, JobStatus
from timeouts import rules
from timeouts.actions import Candidate, Planned, apply

PARAMS = (
    "TIMEOUT_pending",
    "TIMEOUT_defined",
    "TIMEOUT_assigned",
    "TIMEOUT_throttled",
    "TIMEOUT_activated",
    "TIMEOUT_activated_inactive_pq",
    "TIMEOUT_sent",
    "TIMEOUT_running",
    "TIMEOUT_holding_high_prio",
    "TIMEOUT_holding",
    "HEARTBEAT_TIMEOUT",
    "TIMEOUT_HIGH_PRIORITY",
    "INACTIVE_PQ_HOURS",
    "transtimehi",
    "transtimelo",
)


@dataclass
class World:
    """The queues as the rules see them, and how jobs map onto them."""

    queues: dict[int, rules.QueueView]
    site_queue: dict[str, int]  # site name -> its first queue
    queue_site: dict[int, str]
    limits: rules.Limits

    def queue_of(self, status: str, site: str, tj_queue: int | None) -> int | None:
        if status in CLAIMED_STATES:
            return self.site_queue.get(site)
        return tj_queue

    def view(self, qid: int | None) -> rules.QueueView | None:
        return self.queues.get(qid) if qid is not None else None


def load_limits(workflows) -> rules.Limits:
    values = {name: gdpconfig.get(name) for name in PARAMS}
    overrides = {}
    for w in sorted(set(workflows)):
        if w:
            v = gdpconfig.family_value("HEARTBEAT_TIMEOUT_<workflow>", w)
            if v is not None:
                overrides[w] = v
    return rules.Limits.from_params(values, overrides)


def job_statistics() -> tuple[dict[str, datetime], list[tuple]]:
    """One pass over the jobs for two things: the latest start per site (as the brokerage's
    load_queues reads it: the newest state change of a starting or running job), and the task
    jobs per (status, site, TaskJob.queue, gshare) that fast rebrokerage counts."""
    states = (*rules.FAST_REBRO_STATES, JobStatus.RUNNING)
    job, tj, task = Job._meta.db_table, TaskJob._meta.db_table, Task._meta.db_table
    started = ", ".join(f"'{s}'" for s in AT_WORK_STATES)  # module constants: safe to inline
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT j.status, j.site, tj.queue_id, t.gshare, COUNT(*), "
            f"MAX(CASE WHEN j.status IN ({started}) THEN j.status_changed END) "
            f"FROM {job} j LEFT JOIN {tj} tj ON tj.job_id = j.id "
            f"LEFT JOIN {task} t ON t.id = tj.task_id "
            f"WHERE j.status IN ({', '.join(['%s'] * len(states))}) "
            "GROUP BY j.status, j.site, tj.queue_id, t.gshare",
            [str(s) for s in states],
        )
        rows = cur.fetchall()
    starts: dict[str, datetime] = {}
    counts = []
    for status, site, qid, gshare, n, last in rows:
        if last is not None:
            if site not in starts or last > starts[site]:
                starts[site] = last
        if gshare is not None:
            counts.append((status, site, qid, gshare, n))
    return starts, counts


def last_starts() -> dict[str, datetime]:
    """The latest start per site, read from the jobs (as the brokerage's load_queues does)."""
    return dict(
        Job.objects.filter(status__in=AT_WORK_STATES)
        .values_list("site")
        .annotate(t=Max("status_changed"))
        .order_by()
    )


def load_world(starts: dict[str, datetime] | None = None) -> World:
    rows = list(
        PandaQueue.objects.order_by("name").values_list(
            "pk", "name", "site__name", "status", "catchall", "workflow", "last_start", "num_slots"
        )
    )
    starts = last_starts() if starts is None else starts
    queues, queue_site = {}, {}
    # A matched job counts at its site's default queue, as in the brokerage's statistics.
    site_queue, _ = site_queues()
    for pk, name, site, status, catchall, workflow, last_start, num_slots in rows:
        seen = starts.get(site)
        latest = max((t for t in (last_start, seen) if t is not None), default=None)
        queues[pk] = rules.QueueView(name, status, catchall, workflow, latest, num_slots)
        queue_site[pk] = site
    limits = load_limits(q.workflow for q in queues.values())
    return World(queues, site_queue, queue_site, limits)


# --- the scan -----------------------------------------------------------------------------------


@dataclass
class Branches:
    """The rules' conditions per state: `per_state[state]` is a list of (condition, bound),
    `bound` a time every matching job's status_changed is below (None when the condition reads
    the heartbeat, which status_changed does not bound); `exempt` the conditions every
    candidate also meets (the paused / disableReassign queues left out)."""

    per_state: dict[str, list[tuple[Q, datetime | None]]]
    exempt: list[Q]
    beat: Coalesce

    def order(self) -> list[str]:
        """The states, busiest first: a row is tested against its own state's branch after
        at most a few equality tests."""
        busiest = ("activated", "running", "defined", "starting", "transferring", "holding", "sent")
        return [
            *(s for s in busiest if s in self.per_state),
            *sorted(set(self.per_state) - set(busiest)),
        ]

    def of_state(self, state: str) -> tuple[Q, datetime | None]:
        """The condition of one state's branch (its own conditions OR-ed, the state and the
        exemptions AND-ed) and the bound of its status_changed, if every condition has one."""
        either = Q()
        for c, _bound in self.per_state[state]:
            either |= c
        bounds = [bound for _c, bound in self.per_state[state]]
        cond = Q(status=state) & either
        for c in self.exempt:
            cond &= c
        return cond, (max(bounds) if None not in bounds else None)


def branches(world: World, now: datetime) -> Branches:
    """Every rule's condition per state, exact for the job columns and the queues (a superset
    only where `fired` must still choose between rules)."""
    lim = world.limits
    hp = lim.high_priority

    def older(rule_param: str) -> datetime:
        return now - timedelta(seconds=lim.seconds[rule_param])

    exempt_sites = [s for s, q in world.site_queue.items() if world.queues[q].exempt]
    exempt_qids = [q for q, v in world.queues.items() if v.exempt]
    idle = timedelta(seconds=lim.inactive_idle)
    inactive_qids = [q for q, v in world.queues.items() if not v.exempt and v.inactive(now, idle)]
    inactive_sites = [s for s, q in world.site_queue.items() if q in set(inactive_qids)]

    per_state: dict[str, list[tuple[Q, datetime | None]]] = defaultdict(list)
    for rule in rules.RULES:
        if rule.since != rules.STATE or rule.name == "inactive_queue":
            continue
        bound = older(rule.param)
        c = Q(status_changed__lt=bound)
        if rule.name in ("holding_high", "transferring_high"):
            c &= Q(current_priority__gte=hp)
        elif rule.name in ("holding", "transferring"):
            c &= Q(current_priority__lt=hp)
        for state in rule.states:
            per_state[state].append((c, bound))
    cut = older("TIMEOUT_activated_inactive_pq")
    high = Q(current_priority__gte=hp, status_changed__lt=cut)
    if inactive_qids:
        in_queues = TaskJob.objects.filter(queue_id__in=inactive_qids).values("job_id")
        per_state[JobStatus.ACTIVATED].append((high & Q(pk__in=in_queues), cut))
    if inactive_sites:
        per_state[JobStatus.STARTING].append((high & Q(site__in=inactive_sites), cut))

    # Heartbeats: one condition per distinct limit, by the sites whose first queue has it.
    by_limit: dict[float, list[str]] = defaultdict(list)
    for site, qid in world.site_queue.items():
        wf = world.queues[qid].workflow
        if wf in lim.heartbeat_by_workflow:
            by_limit[lim.heartbeat_by_workflow[wf]].append(site)
    override_sites = [s for sites in by_limit.values() for s in sites]
    beat = Coalesce("heartbeat", "status_changed")
    default_cut = now - timedelta(seconds=lim.seconds["HEARTBEAT_TIMEOUT"])
    default_beat = Q(last_word__lt=default_cut)
    if override_sites:
        default_beat &= ~Q(site__in=override_sites)
    for state in AT_WORK_STATES:
        per_state[state].append((default_beat, None))
    for limit, sites in by_limit.items():
        c = Q(last_word__lt=now - timedelta(seconds=limit), site__in=sites)
        per_state["running"].append((c, None))
        per_state["starting"].append((c, None))
        per_state["transferring"].append((c & ~Q(sub_status=""), None))

    exempt = []
    if exempt_sites:
        exempt.append(~Q(status__in=CLAIMED_STATES, site__in=exempt_sites))
    if exempt_qids:
        at_exempt = TaskJob.objects.filter(queue_id__in=exempt_qids).values("job_id")
        exempt.append(~Q(status__in=WAITING_STATES, pk__in=at_exempt))
    return Branches(dict(per_state), exempt, beat)


CANDIDATE_FIELDS = (
    "pk",
    "status",
    "site",
    "status_changed",
    "heartbeat",
    "current_priority",
    "sub_status",
    "reschedule_count",
)


def scan(world: World, now: datetime) -> list[Candidate]:
    """Every candidate of the cycle: scan_by_state without a limit (one query per state on
    the (status, status_changed) index: what it reads follows the jobs in the watched states,
    not the year of finished ones an OR of every branch led the planner to scan)."""
    return scan_by_state(world, now, None)


def scan_by_state(world: World, now: datetime, limit: int | None) -> list[Candidate]:
    """At most `limit` candidates (all without one), read one state at a time, the oldest
    state change first: each state's query walks the (status, status_changed) index and stops
    at the limit or at the branch's bound, whatever the planner believes of how many old
    rows match (the jobs of a year are old; the waiting ones rarely are), so what it reads
    follows the jobs in the states the rules watch, never the finished ones."""
    found = branches(world, now)
    out: list[Candidate] = []
    for state in found.order():
        if limit is not None and len(out) >= limit:
            break
        cond, bound = found.of_state(state)
        if bound is not None:
            cond &= Q(status_changed__lt=bound)  # implied by each condition; walks the index
        qs = (
            Job.objects.annotate(last_word=found.beat)
            .filter(cond)
            .order_by("status_changed")
            .values_list(*CANDIDATE_FIELDS)
        )
        out.extend(Candidate(*row) for row in (qs if limit is None else qs[: limit - len(out)]))
    return _with_task_jobs(out)


def _with_task_jobs(found: list[Candidate]) -> list[Candidate]:
    """The candidates with their TaskJob's queue, task and gshare, when they have one."""
    by_id = {c.id: c for c in found}
    for part in among(TaskJob.objects.all(), "job", by_id):
        for job_id, qid, task_id, gshare in part.values_list(
            "job_id", "queue_id", "task_id", "task__gshare"
        ):
            c = by_id[job_id]
            c.queue_id, c.task_id, c.gshare = qid, task_id, gshare
    return found


def job_view(c: Candidate) -> rules.JobView:
    return rules.JobView(
        c.status, c.status_changed, c.heartbeat, c.current_priority, c.sub_status or ""
    )


# --- fast rebrokerage ---------------------------------------------------------------------------


def fast_rebro_counts(world: World, rows: list[tuple]) -> dict[tuple[int, str], Counter]:
    """{(queue, gshare): Counter(nq=…, nr=…)} from job_statistics' task-job rows."""
    counts: dict[tuple[int, str], Counter] = defaultdict(Counter)
    for status, site, tj_queue, gshare, n in rows:
        qid = world.queue_of(status, site, tj_queue)
        if qid is None:
            continue
        counts[(qid, gshare)]["nr" if status == JobStatus.RUNNING else "nq"] += n
    return counts


def fast_rebro_decisions(world: World, counts, acted: list[Candidate]) -> dict:
    """{(queue, gshare): FastRebro} for every pair with an excess, after removing the jobs the
    timeout rules act on in this cycle."""
    counts = {k: Counter(v) for k, v in counts.items()}
    for c in acted:
        if c.gshare is None:
            continue
        qid = world.queue_of(c.status, c.site, c.queue_id)
        if qid is None or (qid, c.gshare) not in counts:
            continue
        key = "nr" if c.status == JobStatus.RUNNING else "nq"
        if key == "nq" and c.status not in rules.FAST_REBRO_STATES:
            continue
        counts[(qid, c.gshare)][key] -= 1
    totals: Counter = Counter()
    for (_q, g), c in counts.items():
        totals[g] += c["nq"]
    ratio = gdpconfig.get("FAST_REBRO_THRESHOLD_NQNR_RATIO")
    frac = gdpconfig.get("FAST_REBRO_THRESHOLD_NQUEUE_FRAC")
    out = {}
    limit_of: dict[str, int | None] = {}
    for (qid, g), c in sorted(counts.items()):
        queue = world.queues[qid]
        if queue.exempt:
            continue
        if g not in limit_of:
            limit_of[g] = gdpconfig.family_value("FAST_REBRO_THRESHOLD_NQUEUE_<gshare>", g)
        decision = rules.fast_rebrokerage(
            c["nq"], c["nr"], totals[g], ratio, frac, limit_of[g], queue.num_slots
        )
        if decision.excess > 0:
            out[(qid, g)] = decision
    return out


def fast_rebro_jobs(world: World, qid: int, gshare: str, excess: int, skip: set[int]) -> list:
    """The `excess` jobs to take away: the least advanced first (defined, assigned, activated,
    then starting), the oldest (lowest id) first within a state."""
    out: list[Candidate] = []
    fields = (
        "job_id",
        "job__status",
        "job__site",
        "job__status_changed",
        "job__heartbeat",
        "job__current_priority",
        "job__sub_status",
        "job__reschedule_count",
        "queue_id",
        "task_id",
    )
    waiting = [st for st in rules.FAST_REBRO_STATES if st not in CLAIMED_STATES]
    rank = Case(
        *[When(job__status=st, then=Value(i)) for i, st in enumerate(waiting)],
        output_field=IntegerField(),
    )
    at_queue = TaskJob.objects.filter(queue_id=qid, job__status__in=waiting).order_by(
        rank, "job_id"
    )
    site = world.queue_site[qid]
    matched = TaskJob.objects.filter(job__site=site, job__status=JobStatus.STARTING).order_by(
        "job_id"
    )
    # Starting jobs count at their site's default queue only: take them from there alone.
    sources = (at_queue, matched) if world.site_queue.get(site) == qid else (at_queue,)
    for qs in sources:
        want = excess - len(out)
        if want <= 0:
            break
        # Jobs a timeout rule already took are skipped here, in Python: a NOT IN list of
        # thousands of ids would cost more than the few rows read in excess.
        for row in qs.filter(task__gshare=gshare).values_list(*fields)[: want + len(skip)]:
            if row[0] in skip:
                continue
            out.append(Candidate(*row[:8], queue_id=row[8], task_id=row[9], gshare=gshare))
            if len(out) >= excess:
                break
    return out


# --- the cycle ----------------------------------------------------------------------------------


def plan(world: World, now: datetime, candidates: list[Candidate]) -> list[Planned]:
    out = []
    for c in candidates:
        qid = world.queue_of(c.status, c.site, c.queue_id)
        queue = world.view(qid)
        d = rules.fired(job_view(c), queue, now, world.limits)
        if d is None:
            continue
        out.append(Planned(c, d.rule.name, d.rule.action, d.reason, queue.name if queue else ""))
    return out


def fast_rebro_reason(g: str, f: rules.FastRebro) -> str:
    v = f.values
    return (
        f"timeout: fast rebrokerage of {f.excess} ({g}: nQueue {v['nq']} > "
        f"{v['ratio']:g} × nRun {v['nr']}, > {v['frac']:g} × {v['nq_total']}, > "
        f"FAST_REBRO_THRESHOLD_NQUEUE_{g} {v['limit']})"
    )[:255]


@cycle("timeouts")
def timeouts_cycle(run_id=None) -> dict:
    """Apply every timeout rule and fast rebrokerage once; returns counts per rule."""
    run_id = run_id or current_run_id("timeouts")
    now = clock.now()
    starts, task_job_counts = job_statistics()
    world = load_world(starts)
    planned = plan(world, now, scan(world, now))
    acted = {p.job.id for p in planned}
    decisions = fast_rebro_decisions(
        world, fast_rebro_counts(world, task_job_counts), [p.job for p in planned]
    )
    for (qid, g), decision in decisions.items():
        reason = fast_rebro_reason(g, decision)
        for c in fast_rebro_jobs(world, qid, g, decision.excess, acted):
            acted.add(c.id)
            planned.append(
                Planned(c, "fast_rebrokerage", rules.REBROKER, reason, world.queues[qid].name)
            )
    counts = apply(planned, now, run_id)
    return {
        "candidates": len(planned),
        "acted": sum(counts[r] for r in rules.RULE_NAMES),
        **{k: v for k, v in sorted(counts.items()) if v},
    }


def approaching(horizon_s: float, now: datetime | None = None, limit: int = 20000) -> list:
    """[(rule, seconds left)] for jobs a rule will time out within `horizon_s` (the page's
    histogram): the same scan, run as if the clock were `horizon_s` later."""
    now = now or clock.now()
    world = load_world()
    later = now + timedelta(seconds=horizon_s)
    out = []
    for c in scan_by_state(world, later, limit):
        queue = world.view(world.queue_of(c.status, c.site, c.queue_id))
        d = rules.first_deadline(job_view(c), queue, now, world.limits)
        if d is not None and d.at <= later:
            out.append((d.rule.name, (d.at - now).total_seconds()))
    return out
