"""The job checks of PanDA's job brokerage: what removes a queue from a task's candidates
(docs/developer-guide.md, PanDA brokerage).

Each check is a function of (queue, task, JobContext) returning None to keep the queue or the
values it compared to remove it. PRODUCTION and ANALYSIS list them in the seed's order; the
first check that fails a queue is the one the trace records. Check names are stored in traces
and shown on pages: renaming one is a data change.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from brokerage import architecture
from matcher.lifecycle import QUEUED_STATES

if TYPE_CHECKING:
    from brokerage.production import JobContext

MEMORY_COMPENSATION = 0.9
TRANSFERRING_LIMIT = 2000
INACTIVE_AFTER = timedelta(hours=2)
NO_PILOT_AFTER = timedelta(hours=3)
MIN_MAXTIME_SCOUT = 24 * 3600
MIN_OUTPUT_MB = 1.5 * 1024
MIN_WORK_MB = 300
HIGH_PRIORITY = 800  # with scouts: kept off opportunistic and inactive queues
PRE_MATCH = QUEUED_STATES  # PanDA's nQueue

Check = Callable[[Any, Any, "JobContext"], dict | None]
MemoKey = Callable[[Any, "JobContext"], Any]


class JobCheck(NamedTuple):
    name: str
    test: Check
    # What of the task and context the verdicts depend on: a production cycle evaluates the
    # check over all queues once per distinct key. None: evaluated afresh for every task.
    memo_key: MemoKey | None = None


def listed(names: str) -> list[str]:
    return [n.strip() for n in names.split(",") if n.strip()]


def preassigned(task) -> list[str]:
    return listed(task.site)


def nucleus_id(t, ctx: JobContext):
    return ctx.nucleus.pk if ctx.nucleus is not None else None


# --- what the checks estimate and match ----------------------------------------------------------


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


# --- the production checks, in the seed's order --------------------------------------------------


def site_mask(q, t, ctx):
    """The site mask (matcher.site_mask): a queue whose site or CE staff banned takes no job,
    whatever the task asks for. `masked`: set by brokerage.services.world.load_queues."""
    masked = getattr(q, "masked", "")
    return {"site_mask": masked} if masked else None


def status(q, t, ctx):
    if q.status != "online" and not preassigned(t):
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
    if not (t.priority >= HIGH_PRIORITY or t.scout or t.merge):
        return None
    waiting = q.counts.get("activated", 0)
    if waiting and (q.last_start is None or ctx.now - q.last_start > INACTIVE_AFTER):
        return {
            "last_start": q.last_start.isoformat() if q.last_start else None,
            "activated": waiting,
        }
    return None


def opportunistic(q, t, ctx):
    if (t.priority >= HIGH_PRIORITY or t.scout) and q.pledgedcpu == -1:
        return {"pledgedcpu": -1, "priority": t.priority, "scout": t.scout}
    return None


def fairshare(q, t, ctx):
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
    loc = ctx.locality.get(q.name)
    local_gb, local_files = (loc.size_any, loc.files_any) if loc is not None else (0.0, 0)
    missing_gb = max(0.0, tot_size - local_gb)
    missing_files = max(0, tot_files - local_files)
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
        t, ctx.spec, q.releases or [], q.software or {}, q.gpu_summary or [], ctx.all_tags
    )
    if problem:
        return {"problem": problem, "releases": q.releases}
    return None


def memory(q, t, ctx):
    need = expected_memory_mb(t, q)
    cores = q.core_count or 1
    low, high = q.minrss * cores, q.maxrss * cores
    if (high and need > high) or need < low:
        return {"expected_mb": round(need, 1), "min_mb": low, "max_mb": high or None}
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
    # A queue whose pilots the director starts on demand for the jobs waiting there (its CE
    # offers a PayloadTags tag served by a local submit pool: world.load_queues) has no pilot
    # until a job is brokered to it; skipping it for that would keep it empty for ever, so it
    # counts as having pilots.
    if getattr(q, "pilots_on_demand", False):
        return None
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


# --- the analysis checks where they differ from production's -------------------------------------


def analysis_status(q, t, ctx):
    if q.status != "online" and not (listed(t.included_site) or listed(t.site)):
        return {"status": q.status}
    return None


def data_locality(q, t, ctx):
    # Listed only when the brokerage checks locality (see analysis.persistent_checks).
    if ctx.has_input and not ctx.local_data.get(q.name, False):
        return {"input_local": False}
    return None


def vp(q, t, ctx):
    if "vp" not in [c.strip() for c in q.catchall.lower().split(",")]:
        return None
    if t.avoid_vp:
        return {"avoidVP": True, "catchall": q.catchall}
    # Overloaded (PanDA's rule): more than 20 queued and no running, or a queued/running
    # ratio above 1.2 × the ratio over every queue.
    nq = sum(q.counts.get(s, 0) for s in PRE_MATCH)
    nr = q.counts.get("running", 0)
    if nq > 20 and (nr == 0 or nq / nr > 1.2 * ctx.grand_ratio):
        return {
            "VP_overloaded": True,
            "nQ": nq,
            "nR": nr,
            "grand_ratio": round(ctx.grand_ratio, 3),
        }
    return None


def analysis_disk(q, t, ctx):
    if not q.maxwdir:
        return None
    input_mb = 0.0 if q.direct_access_lan else ctx.input_mb_per_job
    need = input_mb + t.out_disk_count * ctx.input_mb_per_job + t.work_disk_count
    per_core = q.maxwdir / (q.core_count or 1)
    if per_core <= need:
        return {"expected_mb": round(need, 1), "maxwdir_per_core_mb": round(per_core, 1)}
    return None


def analysis_endpoints(q, t, ctx):
    bad = [s.name for s in (q.input_storage, q.output_storage) if s is not None and s.blacklisted]
    return {"blacklisted": bad} if bad else None


def short_maxtime(q, t, ctx):
    if (t.scout or t.merge or not t.walltime) and q.maxtime and q.maxtime < 24 * 3600:
        return {"maxtime": q.maxtime, "minimum": 24 * 3600}
    return None


# --- the lists ------------------------------------------------------------------------------------


def _disk_key(t, ctx):
    return (
        t.out_disk_unit,
        t.out_disk_count,
        t.work_disk_count,
        ctx.n_events,
        ctx.input_mb_per_job,
    )


def _share_key(t, ctx):
    return (t.processing_type, t.working_group, t.gshare, t.priority, t.merge)


def _move_input_key(t, ctx):
    return t.pk if (t.io_intensity or 0) > ctx.params["IO_INTENSITY_CUTOFF"] else None


def _urgent_key(t, ctx):
    return ("urgent" in t.processing_type or t.priority >= 1000, nucleus_id(t, ctx))


def _nothing(t, ctx):
    return ()


# `inactive` reads the activated counts that the cycle itself raises: never shared.
PRODUCTION: list[JobCheck] = [
    JobCheck("site_mask", site_mask, _nothing),
    JobCheck("status", status, lambda t, ctx: t.site),
    JobCheck("link_blocked", link_blocked, nucleus_id),
    JobCheck("link_queued", link_queued, nucleus_id),
    JobCheck("nucleus_queued", nucleus_queued, nucleus_id),
    JobCheck("inactive", inactive, None),
    JobCheck("opportunistic", opportunistic, lambda t, ctx: t.priority >= HIGH_PRIORITY or t.scout),
    JobCheck("zero_share", fairshare, _share_key),
    JobCheck("move_input", move_input, _move_input_key),
    JobCheck("diskio", diskio, lambda t, ctx: t.disk_io),
    JobCheck("core_count", core_count, lambda t, ctx: (t.core_count, t.max_core_count)),
    JobCheck(
        "software",
        software,
        lambda t, ctx: (t.architecture, t.release, t.container_name, t.only_tags_for_fc),
    ),
    JobCheck("memory", memory, lambda t, ctx: (t.ram_count, t.base_ram_count, t.ram_unit)),
    JobCheck("direct_access", direct_access, lambda t, ctx: t.direct_access_only),
    JobCheck("disk", disk, _disk_key),
    JobCheck("storage_space", storage_space, _nothing),
    JobCheck("endpoints", endpoints, nucleus_id),
    JobCheck("scout_maxtime", scout_maxtime, lambda t, ctx: (t.scout, bool(t.walltime))),
    JobCheck("walltime", walltime, lambda t, ctx: (t.cpu_time, ctx.n_events, t.base_walltime)),
    JobCheck("connectivity", connectivity, lambda t, ctx: t.ip_connectivity),
    JobCheck("transferring", transferring, _nothing),
    JobCheck("t1_weight", t1_weight, lambda t, ctx: (t.t1_weight, t.merge, nucleus_id(t, ctx))),
    JobCheck("full_chain", full_chain, lambda t, ctx: (t.full_chain, nucleus_id(t, ctx))),
    JobCheck("no_pilot", no_pilot, _nothing),
    JobCheck("urgent_network", urgent_network, _urgent_key),
    JobCheck("work_shortage", work_shortage, _nothing),
]

# The persistent issues; analysis brokerage shares no verdicts between tasks.
ANALYSIS: list[JobCheck] = [
    JobCheck("site_mask", site_mask),
    JobCheck("status", analysis_status),
    JobCheck("data_locality", data_locality),
    JobCheck("diskio", diskio),
    JobCheck("core_count", core_count),
    JobCheck("vp", vp),
    JobCheck("software", software),
    JobCheck("memory", memory),
    JobCheck("disk", analysis_disk),
    JobCheck("storage_space", storage_space),
    JobCheck("endpoints", analysis_endpoints),
    JobCheck("walltime", walltime),
    JobCheck("scout_maxtime", short_maxtime),
    JobCheck("no_pilot", no_pilot),
]
