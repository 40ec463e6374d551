"""ATLAS production brokerage, as seeds/panda-brokerage.txt describes it: task → nucleus, then
jobs → up to 10 queues. Pure: the services load the world into plain objects (model instances
with their counts attached) and store what these functions decide.

Every candidate ends in the trace either with the check that removed it and the values that
check compared, or with its weight and each factor of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from brokerage import architecture
from brokerage.network import LinkData, network_weight

TB = 1024.0  # GB
RW_OFFSET = 50.0  # rwOffset: the smallest remaining work the nucleus weight divides by
TAPE_WEIGHT = 0.001
OUTPUT_GB_PER_CORE_DAY = 0.25  # normalizedExpOutSize: GB per cpuTime × corePower (10) × day
MEMORY_COMPENSATION = 0.9
TRANSFERRING_LIMIT = 2000
INACTIVE_AFTER = timedelta(hours=2)
NO_PILOT_AFTER = timedelta(hours=3)
MIN_MAXTIME_SCOUT = 24 * 3600
MIN_OUTPUT_MB = 1.5 * 1024
MIN_WORK_MB = 300
BEST_CANDIDATES = 10
PRE_MATCH = ("defined", "assigned", "activated", "starting")


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
    # Verdicts shared by the tasks of one cycle (see CHECK_KEYS); None: evaluate everything.
    memo: dict | None = None
    # A merge task's pre-assigned queues were skipped for 24 h: the pre-assignment is ignored.
    preassignment_expired: bool = False


def zero_share(policy: str, task) -> str | None:
    """The first fairsharepolicy entry matching the task decides; '0' or '0%' is a zero share."""
    if not policy.strip() or task.processing_type == "test":
        return None
    for entry in (e.strip() for e in policy.split(",")):
        if not entry:
            continue
        conds, _, share = entry.rpartition(":")
        if not conds:
            continue
        if all(_policy_matches(c.strip(), task) for c in conds.split("&")):
            return entry if share.strip() in ("0", "0%") else None
    return None


def _policy_matches(cond: str, task) -> bool:
    m = re.match(r"^(type|group|gshare)=(.*)$", cond)
    if m:
        key, want = m.groups()
        have = {"type": task.processing_type, "group": task.working_group, "gshare": task.gshare}[
            key
        ]
        if want in ("any", "*"):
            return True
        if key == "gshare":
            return re.fullmatch(want.replace("*", ".*"), have or "") is not None
        return have == want
    m = re.match(r"^priority(>=|<=|==|>|<|=)(-?\d+)$", cond)
    if m:
        if task.merge:
            return True
        op, n = m.group(1), int(m.group(2))
        p = task.priority
        return {">=": p >= n, "<=": p <= n, "==": p == n, "=": p == n, ">": p > n, "<": p < n}[op]
    return False


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


def expected_disk_mb(task, q, ctx: JobContext) -> float:
    input_mb = 0.0 if q.direct_access_lan else ctx.input_mb_per_job
    per = task.out_disk_count / 1024 if task.out_disk_unit.startswith("kB") else task.out_disk_count
    if task.out_disk_unit.endswith("PerEvent"):
        out = per * ctx.n_events
    else:
        out = per * input_mb
    return input_mb + max(MIN_OUTPUT_MB, out) + max(MIN_WORK_MB, task.work_disk_count)


def expected_walltime(task, q, ctx: JobContext) -> float:
    cores = q.core_count or 1
    eff = (q.cpu_efficiency or 100) / 100
    if q.corepower <= 0:
        return float("inf")  # a queue publishing no CPU power cannot promise any walltime
    return task.cpu_time * ctx.n_events / (cores * q.corepower * eff) + task.base_walltime


def expected_memory_mb(task, q) -> float:
    cores = q.core_count or 1
    per = task.ram_count * cores if task.ram_unit == "MBPerCore" else task.ram_count
    return (task.base_ram_count + per) * MEMORY_COMPENSATION


def _connectivity(queue_value: str, task_value: str) -> str | None:
    if not task_value:
        return None
    t_net, _, t_ip = task_value.partition("#")
    q_net, _, q_ip = (queue_value or "full").partition("#")
    accepts = {
        "full": {"full", "http", "none", ""},
        "http": {"http", "none", ""},
        "none": {"none", ""},
    }
    if t_net not in accepts.get(q_net or "full", set()):
        return f"network {t_net} vs {q_net}"
    if t_ip and q_ip != t_ip:
        return f"ip_stack {t_ip} vs {q_ip or 'unset'}"
    if not t_ip and q_ip:
        return f"ip_stack unset vs {q_ip}"
    return None


Check = Callable[[Any, Any, JobContext], dict | None]


def _preassigned(task) -> list[str]:
    return [s.strip() for s in task.site.split(",") if s.strip()]


def job_checks(task, spec: dict) -> list[tuple[str, Check]]:
    """The seed's checks, in its order; each returns the values compared when it removes."""
    pre = bool(_preassigned(task))
    high = task.priority >= 800 or task.scout

    def status(q, t, ctx):
        if not pre and q.status != "online":
            return {"status": q.status}
        return None

    def link_blocked(q, t, ctx):
        link = ctx.links.get(q.site_id)
        if ctx.nucleus is not None and link is not None and link.closeness == -1:
            return {"closeness": -1}
        return None

    def link_queued(q, t, ctx):
        link = ctx.links.get(q.site_id)
        if link is not None and (link.queued_files or 0) > ctx.params["NQUEUED_SAT_CAP"]:
            return {
                "queued_files": link.queued_files,
                "NQUEUED_SAT_CAP": ctx.params["NQUEUED_SAT_CAP"],
            }
        return None

    def nucleus_queued(q, t, ctx):
        cap = ctx.params["NQUEUED_NUC_CAP_FOR_JOBS"]
        if ctx.nucleus is not None and ctx.nucleus_queued_files > cap:
            return {"files_to_nucleus": ctx.nucleus_queued_files, "NQUEUED_NUC_CAP_FOR_JOBS": cap}
        return None

    def inactive(q, t, ctx):
        if not (high or t.merge):
            return None
        waiting = q.counts.get("activated", 0)
        if waiting and (q.last_start is None or ctx.now - q.last_start > INACTIVE_AFTER):
            return {
                "last_start": q.last_start.isoformat() if q.last_start else None,
                "activated": waiting,
            }
        return None

    def opportunistic(q, t, ctx):
        if high and q.pledgedcpu == -1:
            return {"pledgedcpu": -1, "priority": t.priority, "scout": t.scout}
        return None

    def share(q, t, ctx):
        entry = zero_share(q.fairsharepolicy, t)
        if entry:
            return {
                "fairsharepolicy": q.fairsharepolicy,
                "matched": entry,
                "processingType": t.processing_type,
            }
        return None

    def move_input(q, t, ctx):
        io = t.io_intensity or 0
        if io <= ctx.params["IO_INTENSITY_CUTOFF"]:
            return None
        tot_size, tot_files = ctx.totals
        loc = ctx.locality.get(q.name, Locality())
        missing_gb = max(0.0, tot_size - loc.size_any)
        missing_files = max(0, tot_files - loc.files_any)
        if (
            missing_gb >= ctx.params["SIZE_CUTOFF_TO_MOVE_INPUT"]
            or missing_files >= ctx.params["NUM_CUTOFF_TO_MOVE_INPUT"]
        ):
            return {"missing_gb": missing_gb, "missing_files": missing_files, "ioIntensity": io}
        return None

    def diskio(q, t, ctx):
        limit = q.max_diskio if q.max_diskio is not None else ctx.params["MAX_DISKIO_DEFAULT"]
        if t.disk_io is not None and q.diskio_per_core > limit and t.disk_io > limit:
            return {
                "queue_diskio_per_core": q.diskio_per_core,
                "limit": limit,
                "task_diskIO": t.disk_io,
            }
        return None

    def core_count(q, t, ctx):
        qc = q.core_count or 1
        if t.core_count > 1 and qc <= 1:
            return {"task_coreCount": t.core_count, "queue_coreCount": qc}
        if t.core_count == 1 and qc > 1:
            return {"task_coreCount": 1, "queue_coreCount": qc}
        if t.max_core_count and qc > t.max_core_count:
            return {"task_maxCoreCount": t.max_core_count, "queue_coreCount": qc}
        if q.max_core_count and t.core_count > q.max_core_count:
            return {"task_coreCount": t.core_count, "queue_maxCoreCount": q.max_core_count}
        return None

    def software(q, t, ctx):
        problem = architecture.check_software(
            t, spec, q.releases or [], q.software or {}, q.gpu_summary or [], ctx.all_tags
        )
        if problem:
            return {"problem": problem, "releases": q.releases}
        return None

    def memory(q, t, ctx):
        need = expected_memory_mb(t, q)
        cores = q.core_count or 1
        low, high_ = q.minrss * cores, q.maxrss * cores
        if (high_ and need > high_) or need < low:
            return {"expected_mb": round(need, 1), "min_mb": low, "max_mb": high_ or None}
        return None

    def direct_access(q, t, ctx):
        if t.direct_access_only and not q.direct_access_lan:
            return {"direct_access_lan": False}
        return None

    def disk(q, t, ctx):
        if not q.maxwdir:
            return None
        need = expected_disk_mb(t, q, ctx)
        per_core = q.maxwdir / (q.core_count or 1)
        if per_core <= need:
            return {"expected_mb": round(need, 1), "maxwdir_per_core_mb": round(per_core, 1)}
        return None

    def storage_space(q, t, ctx):
        s = q.output_storage
        minimum = ctx.params["STORAGE_MIN_FREE_SIZE"]
        if s is None or s.space_free <= minimum:
            return {"free_gb": s.space_free if s else None, "minimum_gb": minimum}
        return None

    def endpoints(q, t, ctx):
        i, o = q.input_storage, q.output_storage
        bad = []
        if i is None or i.blacklisted or not i.read_lan:
            bad.append("input not readable over LAN")
        if o is None or o.blacklisted or not o.write_lan:
            bad.append("output not writable over LAN")
        satellite = ctx.nucleus is not None and q.nucleus_id != ctx.nucleus.pk
        if satellite:
            if i is not None and not i.write_wan:
                bad.append("input cannot receive over WAN")
            if o is not None and not o.read_wan:
                bad.append("output cannot send over WAN")
            if any(not (s.read_wan and s.write_wan) for s in ctx.nucleus.storages_list):
                bad.append("nucleus storage not open over WAN")
        return {"endpoints": bad} if bad else None

    def scout_maxtime(q, t, ctx):
        if (t.scout or not t.walltime) and q.maxtime and q.maxtime < MIN_MAXTIME_SCOUT:
            return {"maxtime": q.maxtime, "minimum": MIN_MAXTIME_SCOUT}
        return None

    def walltime(q, t, ctx):
        est = expected_walltime(t, q, ctx)
        if est < q.mintime or (q.maxtime and est > q.maxtime):
            expected = round(est) if est != float("inf") else "unbounded (corepower 0)"
            return {"expected_s": expected, "mintime": q.mintime, "maxtime": q.maxtime or None}
        return None

    def connectivity(q, t, ctx):
        problem = _connectivity(q.wnconnectivity, t.ip_connectivity)
        if problem:
            return {
                "ipConnectivity": t.ip_connectivity,
                "wnconnectivity": q.wnconnectivity,
                "problem": problem,
            }
        return None

    def transferring(q, t, ctx):
        n = q.counts.get("transferring", 0)
        limit = max(q.transferring_limit or TRANSFERRING_LIMIT, 2 * q.counts.get("running", 0))
        if n > limit:
            return {"transferring": n, "limit": limit}
        return None

    def t1_weight(q, t, ctx):
        if (
            t.t1_weight == -1
            and not t.merge
            and ctx.nucleus is not None
            and q.nucleus_id != ctx.nucleus.pk
        ):
            return {"t1Weight": -1, "queue_nucleus": q.nucleus.name if q.nucleus_id else None}
        return None

    def full_chain(q, t, ctx):
        n = ctx.nucleus
        if n is None or not n.bare_nucleus:
            if q.nucleus_id and q.nucleus.bare_nucleus == "only" and not t.full_chain:
                return {"queue_bareNucleus": "only", "fullChain": None}
            return None
        only_nucleus = t.full_chain in ("only", "require") or (t.full_chain == "capable")
        if only_nucleus and q.nucleus_id != n.pk:
            return {"fullChain": t.full_chain, "nucleus": n.name, "bareNucleus": n.bare_nucleus}
        return None

    def no_pilot(q, t, ctx):
        if q.last_pilot is None or ctx.now - q.last_pilot > NO_PILOT_AFTER:
            return {"last_pilot": q.last_pilot.isoformat() if q.last_pilot else None}
        return None

    def urgent_network(q, t, ctx):
        if "urgent" not in t.processing_type and t.priority < 1000:
            return None
        nw = q.network
        need = ctx.params["NW_THRESHOLD"] * ctx.params["NW_WEIGHT_MULTIPLIER"]
        if nw is not None and nw[0] < need:
            return {"network_weight": round(nw[0], 4), "needed": need}
        return None

    def work_shortage(q, t, ctx):
        if not ctx.params["WORK_SHORTAGE"]:
            return None
        if q.pledgedcpu == -1:
            return {"pledgedcpu": -1}
        cores = q.counts.get("running", 0) * (q.core_count or 1)
        if q.pledgedcpu > 0 and cores > q.pledgedcpu:
            return {"running_cores": cores, "pledgedcpu": q.pledgedcpu}
        return None

    return [
        ("status", status),
        ("link_blocked", link_blocked),
        ("link_queued", link_queued),
        ("nucleus_queued", nucleus_queued),
        ("inactive", inactive),
        ("opportunistic", opportunistic),
        ("zero_share", share),
        ("move_input", move_input),
        ("diskio", diskio),
        ("core_count", core_count),
        ("software", software),
        ("memory", memory),
        ("direct_access", direct_access),
        ("disk", disk),
        ("storage_space", storage_space),
        ("endpoints", endpoints),
        ("scout_maxtime", scout_maxtime),
        ("walltime", walltime),
        ("connectivity", connectivity),
        ("transferring", transferring),
        ("t1_weight", t1_weight),
        ("full_chain", full_chain),
        ("no_pilot", no_pilot),
        ("urgent_network", urgent_network),
        ("work_shortage", work_shortage),
    ]


def _nid(t, ctx):
    return ctx.nucleus.pk if ctx.nucleus is not None else None


# What of the task (and context) each check reads: within a cycle, a check's verdicts over all
# queues are computed once per distinct key and reused by every task sharing it. `inactive`
# reads the activated counts that the cycle itself raises, so it is always evaluated.
CHECK_KEYS: dict[str, Callable[[Any, JobContext], Any] | None] = {
    "status": lambda t, ctx: t.site,
    "link_blocked": _nid,
    "link_queued": _nid,
    "nucleus_queued": _nid,
    "inactive": None,
    "opportunistic": lambda t, ctx: t.priority >= 800 or t.scout,
    "zero_share": lambda t, ctx: (
        t.processing_type,
        t.working_group,
        t.gshare,
        t.priority,
        t.merge,
    ),
    "move_input": lambda t, ctx: (
        t.pk if (t.io_intensity or 0) > ctx.params["IO_INTENSITY_CUTOFF"] else None
    ),
    "diskio": lambda t, ctx: t.disk_io,
    "core_count": lambda t, ctx: (t.core_count, t.max_core_count),
    "software": lambda t, ctx: (t.architecture, t.release, t.container_name, t.only_tags_for_fc),
    "memory": lambda t, ctx: (t.ram_count, t.base_ram_count, t.ram_unit),
    "direct_access": lambda t, ctx: t.direct_access_only,
    "disk": lambda t, ctx: (
        t.out_disk_unit,
        t.out_disk_count,
        t.work_disk_count,
        ctx.n_events,
        ctx.input_mb_per_job,
    ),
    "storage_space": lambda t, ctx: (),
    "endpoints": _nid,
    "scout_maxtime": lambda t, ctx: (t.scout, bool(t.walltime)),
    "walltime": lambda t, ctx: (t.cpu_time, ctx.n_events, t.base_walltime),
    "connectivity": lambda t, ctx: t.ip_connectivity,
    "transferring": lambda t, ctx: (),
    "t1_weight": lambda t, ctx: (t.t1_weight, t.merge, _nid(t, ctx)),
    "full_chain": lambda t, ctx: (t.full_chain, _nid(t, ctx)),
    "no_pilot": lambda t, ctx: (),
    "urgent_network": lambda t, ctx: (
        "urgent" in t.processing_type or t.priority >= 1000,
        _nid(t, ctx),
    ),
    "work_shortage": lambda t, ctx: (),
}


def _input_local(q, ctx: JobContext) -> bool:
    tot_files = ctx.totals[1]
    return tot_files == 0 or ctx.locality.get(q.name, Locality()).files_any >= tot_files


def queue_weight(task, q, ctx: JobContext, detail: bool = True) -> tuple[float, dict]:
    """The weight and its factors (detail=False: only the weight and the running count, for
    the candidates that will not make the best 10)."""
    c = q.counts
    running, running_source = effective_running(q)
    tot_size, tot_files = ctx.totals
    loc = ctx.locality.get(q.name, Locality())
    missing_files = max(0, tot_files - loc.files_any)
    local_input = _input_local(q, ctx)
    activated = c.get("activated", 0)
    assigned = 0 if local_input else c.get("assigned", 0)
    starting, defined = c.get("starting", 0), c.get("defined", 0)
    if activated:
        many_assigned = max(1.0, min(2.0, assigned / activated))
    else:
        many_assigned = 2.0 if assigned else 1.0
    w = (running + 1) / ((activated + assigned + starting + defined + 10) * many_assigned)
    if not detail:
        if tot_size > 0:
            w *= (loc.size_any + tot_size) / (tot_size * (missing_files / 100 + 1))
        if q.network is not None:
            w *= q.network[0]
        return w, {"running": running}
    factors: dict[str, Any] = {
        "running": running,
        "running_from": running_source,
        "activated": activated,
        "assigned": assigned,
        "starting": starting,
        "defined": defined,
        "manyAssigned": many_assigned,
        "basic": round(w, 6),
    }
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


def first_failing(live: list, checks, task, ctx) -> tuple[list[Candidate], list[tuple]]:
    """Each queue through the checks in order: a candidate per queue, removed by the first
    check that fails it; and the (queue, candidate) pairs that passed every check."""
    cands = [Candidate(q.name) for q in live]
    survivors = []
    for q, c in zip(live, cands, strict=True):
        for name, check in checks:
            values = check(q, task, ctx)
            if values is not None:
                c.remove(name, **values)
                break
        else:
            survivors.append((q, c))
    return cands, survivors


def broker_jobs(task, queues: list, ctx: JobContext) -> Decision:
    """Choose up to 10 queues for a task's jobs."""
    spec = task.architecture_spec or architecture.parse(task.architecture)
    pre = set() if ctx.preassignment_expired else set(_preassigned(task))
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
    nid = _nid(task, ctx)
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
    checks = job_checks(task, spec)
    removed_rows: list[tuple] = []
    if memo is None:
        cands, survivors = first_failing(live, checks, task, ctx)
    else:
        alive = set(range(len(live)))
        for name, check in checks:
            key_of = CHECK_KEYS[name]
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
        survivors = [(live[i], Candidate(live[i].name)) for i in sorted(alive)]
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
