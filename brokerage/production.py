"""ATLAS production brokerage, as PanDA's description has it (docs/developer-guide.md, PanDA
brokerage): task → nucleus, then
jobs → up to 10 queues. Pure: the services load the world into plain objects (model instances
with their counts attached) and store what these functions decide.

Every candidate ends in the trace either with the check that removed it and the values that
check compared, or with its weight and each factor of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from brokerage import checks
from brokerage.checks import expected_disk_mb as expected_disk_mb  # re-exported for the tests
from brokerage.checks import zero_share as zero_share
from brokerage.network import LinkData, network_weight

TB = 1024.0  # GB
RW_OFFSET = 50.0  # rwOffset: the smallest remaining work the nucleus weight divides by
TAPE_WEIGHT = 0.001
OUTPUT_GB_PER_CORE_DAY = 0.25  # normalizedExpOutSize: GB per cpuTime × corePower (10) × day
BEST_CANDIDATES = 10


@dataclass(slots=True)
class Candidate:
    name: str
    removed_by: str = ""
    values: dict = field(default_factory=dict)
    weight: float | None = None
    factors: dict = field(default_factory=dict)

    def remove(self, check: str, **values) -> None:
        self.removed_by = check
        self.values = values

    def as_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name}
        if self.removed_by:
            d["removed_by"] = self.removed_by
            d["values"] = self.values
        else:
            d["weight"] = self.weight
            d["factors"] = self.factors
        return d


@dataclass
class Decision:
    candidates: list[Candidate]
    chosen: list[str]
    message: str = ""
    # Candidates removed by a memoised check, as (name, check, values): at 500 queues × 1,000
    # tasks a cycle, objects per candidate cost more than the decision itself.
    removed_rows: list[tuple] = field(default_factory=list)

    @property
    def removed_by(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.candidates:
            if c.removed_by:
                out[c.removed_by] = out.get(c.removed_by, 0) + 1
        for _, check, _ in self.removed_rows:
            out[check] = out.get(check, 0) + 1
        return out

    def trace_rows(self) -> list[list]:
        """The trace: [name, check, values] for a removed candidate, [name, "", factors,
        weight] for a kept one."""
        rows = [list(r) for r in self.removed_rows]
        for c in self.candidates:
            if c.removed_by:
                rows.append([c.name, c.removed_by, c.values])
            else:
                rows.append([c.name, "", c.factors, c.weight])
        return rows


@dataclass
class Locality:
    """What of a task's input a nucleus or queue holds locally."""

    size_any: float = 0.0  # GB on disk or tape
    size_disk: float = 0.0
    files_any: int = 0


# --- task → nucleus ------------------------------------------------------------------------------


def disk_threshold_gb(params: dict, gshare: str) -> float:
    per_share = params.get("DISK_THRESHOLD_PER_GSHARE", {}).get(gshare)
    return (params["DISK_THRESHOLD"] if per_share is None else per_share) * TB


def broker_task(
    task,
    nuclei: list,
    locality: dict[str, Locality],
    totals: tuple[float, int],
    params: dict,
    rng,
    parent_nucleus=None,
) -> Decision:
    """Choose a nucleus for a production task.

    nuclei: Nucleus-like objects with `.storages_list` (Storage-likes) and `.rw` (remaining work
    in core-days); locality: per nucleus name; totals: (total input GB, total input files).
    """
    tot_size, tot_files = totals
    cands = {n.name: Candidate(n.name) for n in nuclei}
    live: list = []
    threshold = disk_threshold_gb(params, task.gshare)
    for n in nuclei:
        c = cands[n.name]
        if n.state != "ACTIVE":
            c.remove("status", state=n.state)
        elif n.transfer_backlog and task.t1_weight >= 0:
            c.remove("transfer_backlog", t1Weight=task.t1_weight)
        elif not n.storages_list:
            c.remove("no_storage")
        elif problem := _space_problem(n, threshold):
            c.remove("space", **problem)
        elif bad := [s.name for s in n.storages_list if not (s.read_wan and s.write_wan)]:
            c.remove("wan", storages_without_read_and_write_wan=bad)
        elif problem := _full_chain_nucleus(task, n, parent_nucleus):
            c.remove("full_chain", **problem)
        else:
            live.append(n)

    # Data locality, with its waiver when nobody passes.
    passing, failing = [], []
    for n in live:
        problem = _locality_problem(
            task, locality.get(n.name, Locality()), tot_size, tot_files, params
        )
        (failing if problem else passing).append((n, problem))
    if not passing and failing:
        io = task.io_intensity or 0
        waived = (
            io <= params["MIN_IO_INTENSITY_WITH_LOCAL_DATA"]
            and tot_size <= params["MIN_INPUT_SIZE_WITH_LOCAL_DATA"]
        ) or task.priority >= params["MAX_TASK_PRIO_WITH_LOCAL_DATA"]
        if waived:
            passing = [(n, None) for n, _ in failing]
            failing = []
    for n, problem in failing:
        cands[n.name].remove("data_locality", **problem)
    live = [n for n, _ in passing]

    weights = []
    for n in live:
        c = cands[n.name]
        c.weight, c.factors = nucleus_weight(
            task, n, locality.get(n.name, Locality()), tot_size, params
        )
        weights.append((n.name, c.weight))
    if not weights:
        return Decision(list(cands.values()), [], "no nucleus passed the checks")
    chosen = weighted_choice(weights, rng)
    return Decision(list(cands.values()), [chosen])


def _space_problem(n, threshold_gb: float) -> dict | None:
    projected = OUTPUT_GB_PER_CORE_DAY * n.rw
    for s in n.storages_list:
        left = s.space_free + s.space_expired - projected
        if left <= threshold_gb:
            return {
                "storage": s.name,
                "free_gb": s.space_free,
                "expired_gb": s.space_expired,
                "expected_output_gb": round(projected, 3),
                "threshold_gb": threshold_gb,
            }
    return None


def _locality_problem(task, loc: Locality, tot_size: float, tot_files: int, params) -> dict | None:
    if task.input_pre_staging and (loc.files_any > 0 or tot_files == 0):
        return None  # incomplete local data will do: the data carousel completes it
    if tot_size > params["INPUT_SIZE_THRESHOLD"]:
        frac = loc.size_any / tot_size
        if frac <= params["INPUT_SIZE_FRACTION"]:
            return {
                "local_gb": loc.size_any,
                "total_gb": tot_size,
                "fraction": round(frac, 4),
                "INPUT_SIZE_FRACTION": params["INPUT_SIZE_FRACTION"],
            }
    if tot_files > params["INPUT_NUM_THRESHOLD"]:
        frac = loc.files_any / tot_files
        if frac <= params["INPUT_NUM_FRACTION"]:
            return {
                "local_files": loc.files_any,
                "total_files": tot_files,
                "fraction": round(frac, 4),
                "INPUT_NUM_FRACTION": params["INPUT_NUM_FRACTION"],
            }
    return None


def _full_chain_nucleus(task, n, parent_nucleus) -> dict | None:
    fc = task.full_chain
    if fc == "capable" and parent_nucleus is not None and parent_nucleus.bare_nucleus:
        if n.name != parent_nucleus.name:
            return {"fullChain": fc, "parent_nucleus": parent_nucleus.name}
        return None
    # `capable` counts as full chain only with a parent on a bare nucleus (handled above).
    if n.bare_nucleus == "only" and fc not in ("only", "require"):
        return {"bareNucleus": "only", "fullChain": fc or None}
    if fc == "only" and n.bare_nucleus != "only":
        return {"fullChain": fc, "bareNucleus": n.bare_nucleus or None}
    if fc == "require" and n.bare_nucleus not in ("only", "allow"):
        return {"fullChain": fc, "bareNucleus": n.bare_nucleus or None}
    return None


def nucleus_weight(task, n, loc: Locality, tot_size: float, params) -> tuple[float, dict]:
    free = sum(s.space_free for s in n.storages_list)
    expired = sum(s.space_expired for s in n.storages_list)
    total = sum(s.space_total for s in n.storages_list) or 1.0
    cutoff = params["FREE_DISK_CUTOFF"] * TB
    on_tape_only = loc.size_any > loc.size_disk
    tape_w = TAPE_WEIGHT if on_tape_only else 1.0
    rw = max(RW_OFFSET, n.rw)
    w = tape_w * (free + expired) * min(cutoff, free) / (rw * total)
    factors = {
        "tapeWeight": tape_w,
        "spaceFree_gb": free,
        "spaceExpired_gb": expired,
        "spaceFreeCutoff_gb": cutoff,
        "spaceTotal_gb": total,
        "RW": round(n.rw, 3),
        "max(rwOffset,RW)": rw,
    }
    io = task.io_intensity
    if io is not None and io > params["MIN_IO_INTENSITY_WITH_LOCAL_DATA"] and tot_size > 0:
        w *= loc.size_any / tot_size
        factors["localInputSize_gb"] = loc.size_any
        factors["totalInputSize_gb"] = tot_size
    return w, factors


def weighted_choice(weights: list[tuple[str, float]], rng) -> str:
    """Draw r ~ U(0, Σw) and walk the candidates in order; all-zero weights: uniform."""
    total = sum(w for _, w in weights)
    if total <= 0:
        return weights[int(rng.random() * len(weights)) % len(weights)][0]
    r = rng.random() * total
    for name, w in weights:
        r -= w
        if r <= 0:
            return name
    return weights[-1][0]


# --- jobs → queues ------------------------------------------------------------------------------


@dataclass
class JobContext:
    """What job brokerage needs besides the task and the queues."""

    nucleus: Any  # Nucleus-like with .name, .site_id, .bare_nucleus, .storages_list
    links: dict[int, LinkData]  # by source site id
    nucleus_queued_files: int
    locality: dict[str, Locality]  # by queue name: input held at the queue's input storage
    totals: tuple[float, int]
    now: datetime
    params: dict
    all_tags: list[dict] = field(default_factory=list)
    n_events: int = 0  # smallest events per job
    input_mb_per_job: float = 0.0
    # Verdicts shared by the tasks of one cycle (see JobCheck.memo_key); None: evaluate all.
    memo: dict | None = None
    # A merge task's pre-assigned queues were skipped for 24 h: the pre-assignment is ignored.
    preassignment_expired: bool = False
    # The task's architecture as parsed at submission (Task.architecture_spec); brokers set it.
    spec: dict = field(default_factory=dict)


def effective_running(q) -> tuple[int, str]:
    """The seed's 'largest of': real running, bootstrap workers, numSlots, or starting."""
    c = q.counts
    r_real = c.get("running", 0)
    options = [(r_real, "running")]
    if r_real < 20 and q.n_batch_jobs > r_real:
        options.append((min(q.n_batch_jobs, 20), "min(nBatchJob, 20)"))
    if q.num_slots is not None and q.num_slots > 0:
        options.append((q.num_slots, "numSlots"))
    if q.num_slots == 0:
        options.append((c.get("starting", 0), "starting (numSlots = 0)"))
    return max(options, key=lambda o: o[0])


def _input_local(q, ctx: JobContext) -> bool:
    tot_files = ctx.totals[1]
    return tot_files == 0 or ctx.locality.get(q.name, Locality()).files_any >= tot_files


def basic_weight(q, input_local: bool = False) -> tuple[float, dict[str, Any]]:
    """The basic (task-independent) weight (running + 1) / ((activated + assigned + starting +
    defined + 10) × manyAssigned) and its factors. Assigned jobs (waiting for their input)
    count only when the task's input is not local to the queue (input_local False: they count,
    as for a task whose input is elsewhere)."""
    c = q.counts
    running, running_source = effective_running(q)
    activated = c.get("activated", 0)
    assigned = 0 if input_local else c.get("assigned", 0)
    starting, defined = c.get("starting", 0), c.get("defined", 0)
    if activated:
        many_assigned = max(1.0, min(2.0, assigned / activated))
    else:
        many_assigned = 2.0 if assigned else 1.0
    w = (running + 1) / ((activated + assigned + starting + defined + 10) * many_assigned)
    return w, {
        "running": running,
        "running_from": running_source,
        "activated": activated,
        "assigned": assigned,
        "starting": starting,
        "defined": defined,
        "manyAssigned": many_assigned,
    }


def queue_weight(task, q, ctx: JobContext, detail: bool = True) -> tuple[float, dict]:
    """The weight and its factors (detail=False: only the weight and the running count, for
    the candidates that will not make the best 10)."""
    w, factors = basic_weight(q, _input_local(q, ctx))
    tot_size, tot_files = ctx.totals
    loc = ctx.locality.get(q.name, Locality())
    missing_files = max(0, tot_files - loc.files_any)
    if not detail:
        if tot_size > 0:
            w *= (loc.size_any + tot_size) / (tot_size * (missing_files / 100 + 1))
        if q.network is not None:
            w *= q.network[0]
        return w, {"running": factors["running"]}
    factors["basic"] = round(w, 6)
    if tot_size > 0:
        data = (loc.size_any + tot_size) / (tot_size * (missing_files / 100 + 1))
        w *= data
        factors["data"] = round(data, 6)
        factors["availableSize_gb"] = loc.size_any
        factors["numMissingFiles"] = missing_files
    if q.network is not None:
        w *= q.network[0]
        factors["network"] = round(q.network[0], 4)
        factors["network_detail"] = q.network[1]
    return w, factors


def first_failing(
    live: list, job_checks: list[checks.JobCheck], task, ctx
) -> tuple[list[Candidate], list[tuple]]:
    """Each queue through the checks in order: a candidate per queue, removed by the first
    check that fails it; and the (queue, candidate) pairs that passed every check."""
    cands = [Candidate(q.name) for q in live]
    survivors = []
    for q, c in zip(live, cands, strict=True):
        for name, check, _ in job_checks:
            values = check(q, task, ctx)
            if values is not None:
                c.remove(name, **values)
                break
        else:
            survivors.append((q, c))
    return cands, survivors


def _first_failing_shared(live: list, task, ctx: JobContext, memo: dict) -> tuple[list, list]:
    """first_failing over the cycle's shared verdicts: each check runs over every queue once
    per distinct memo key. Returns the survivors as (queue, candidate) and the removed rows."""
    removed_rows: list[tuple] = []
    alive = set(range(len(live)))
    for name, check, key_of in checks.PRODUCTION:
        if key_of is None:
            verdicts = {i: v for i in alive if (v := check(live[i], task, ctx)) is not None}
        else:
            key = (name, key_of(task, ctx))
            verdicts = memo.get(key)
            if verdicts is None:
                verdicts = memo[key] = {
                    i: v for i, q in enumerate(live) if (v := check(q, task, ctx)) is not None
                }
        hit = alive.intersection(verdicts)
        if hit:
            removed_rows.extend((live[i].name, name, verdicts[i]) for i in hit)
            alive.difference_update(hit)
        if not alive:
            break
    return [(live[i], Candidate(live[i].name)) for i in sorted(alive)], removed_rows


def broker_jobs(task, queues: list, ctx: JobContext) -> Decision:
    """Choose up to 10 queues for a task's jobs."""
    ctx = replace(ctx, spec=task.architecture_spec)  # parsed at submission
    pre = set() if ctx.preassignment_expired else set(checks.preassigned(task))
    memo = ctx.memo if not pre else None  # pre-assigned tasks see their own candidate lists
    if memo is not None and "live" in memo:
        live = memo["live"]
    else:
        # Production jobs go to production or unified queues, never to analysis ones.
        live = [
            q
            for q in queues
            if q.queue_type != "analysis"
            and ((q.name in pre) if pre else ("test" not in q.name.lower()))
        ]
        if memo is not None:
            memo["live"] = live
    nid = checks.nucleus_id(task, ctx)
    networks = memo.get(("network", nid)) if memo is not None else None
    if networks is None:
        networks = [
            network_weight(
                ctx.links.get(q.site_id),
                q.site_id == ctx.nucleus.site_id,
                ctx.params["NQUEUED_SAT_CAP"],
                ctx.params["NW_QUEUE_IMPORTANCE"],
            )
            if ctx.nucleus is not None
            else None
            for q in live
        ]
        if memo is not None:
            memo[("network", nid)] = networks
    for q, nw in zip(live, networks, strict=True):
        q.network = nw
    removed_rows: list[tuple] = []
    if memo is None:
        cands, survivors = first_failing(live, checks.PRODUCTION, task, ctx)
    else:
        survivors, removed_rows = _first_failing_shared(live, task, ctx, memo)
        cands = [c for _, c in survivors]

    kept = []
    for q, c in survivors:
        c.weight, c.factors = queue_weight(task, q, ctx, detail=False)
        counts = q.counts
        running = c.factors["running"]
        a_s = counts.get("activated", 0) + counts.get("starting", 0)
        # Assigned jobs (waiting for their input) count only when this input is not local.
        assigned = 0 if _input_local(q, ctx) else counts.get("assigned", 0)
        queued = a_s + counts.get("defined", 0) + assigned
        if a_s > 2 * running:
            c.remove(
                "too_many_activated", activated_plus_starting=a_s, running=running, weight=c.weight
            )
        elif queued > 2 * running:
            c.remove("too_many_queued", queued=queued, running=running, weight=c.weight)
        else:
            kept.append((q, c))
    kept.sort(key=lambda qc: (-qc[1].weight, qc[0].name))
    for _q, c in kept[BEST_CANDIDATES:]:
        c.remove("low_weight", weight=c.weight, rank_needed=BEST_CANDIDATES)
    best = kept[:BEST_CANDIDATES]
    for q, c in best:
        c.weight, c.factors = queue_weight(task, q, ctx)
    if not best:
        return Decision(cands, [], "every queue was skipped", removed_rows)
    return Decision(cands, [q.name for q, _ in best], "", removed_rows)
