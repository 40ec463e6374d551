"""ATLAS analysis job brokerage (docs/developer-guide.md, PanDA brokerage):
the throttles, the candidates, the persistent then the temporary filters, the Analysis
Stabilizer, the original and the new basic weight, the best 10. Pure, like production.py."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from brokerage import checks, production
from brokerage.production import Decision, JobContext

ANALYSIS_TYPES = ("analysis", "unified")
CLASSED_SHARES = ("User Analysis", "Express Analysis")
TINY = 2.0**-20  # keeps a weight from being exactly zero


# --- throttles -----------------------------------------------------------------------------------


@dataclass
class Usage:
    """What the user (or the task's working group) has now, and the User Analysis share."""

    running_jobs: int = 0
    queued_jobs: int = 0
    running_cores: int = 0
    queued_cores: int = 0
    disk_used_gb: float = 0.0
    disk_quota_gb: float | None = None
    share_usage_pct: float | None = None  # User Analysis running cores, % of its target
    hi_site_slots: int = 0  # the user's running slots at hi-class sites


def throttle(task, usage: Usage, params: dict) -> dict | None:
    """The first throttle that holds, with the values compared; None: broker the task."""
    who = "GROUP" if task.working_group else "USER"
    jobs_cap = params[f"CAP_RUNNING_{who}_JOBS"]
    cores_cap = params[f"CAP_RUNNING_{who}_CORES"]
    subject = {"working_group": task.working_group} if task.working_group else {}
    if jobs_cap and usage.running_jobs > jobs_cap:
        return {
            "throttle": "running_jobs",
            "running": usage.running_jobs,
            f"CAP_RUNNING_{who}_JOBS": jobs_cap,
            **subject,
        }
    if jobs_cap and usage.queued_jobs > 2 * jobs_cap:
        return {
            "throttle": "queued_jobs",
            "queued": usage.queued_jobs,
            "limit": 2 * jobs_cap,
            **subject,
        }
    if cores_cap and usage.running_cores > cores_cap:
        return {
            "throttle": "running_cores",
            "running_cores": usage.running_cores,
            f"CAP_RUNNING_{who}_CORES": cores_cap,
            **subject,
        }
    if cores_cap and usage.queued_cores > 2 * cores_cap:
        return {
            "throttle": "queued_cores",
            "queued_cores": usage.queued_cores,
            "limit": 2 * cores_cap,
            **subject,
        }
    if usage.disk_quota_gb is not None and usage.disk_used_gb > usage.disk_quota_gb:
        return {
            "throttle": "disk_quota",
            "used_gb": usage.disk_used_gb,
            "quota_gb": usage.disk_quota_gb,
        }
    if task.gshare == "User Analysis" and usage.share_usage_pct is not None:
        pct = usage.share_usage_pct
        limit = None
        if task.task_class == "C":
            limit = 90.0
        elif task.task_class == "B":
            limit = 95.0
        elif task.task_class == "A":
            slots = usage.hi_site_slots
            ratio = params["USER_USAGE_THRESHOLD_A"] / slots if slots else float("inf")
            limit = max(ratio, 1.0) * 100
        if limit is not None and pct > limit:
            return {
                "throttle": "user_analysis_share",
                "task_class": task.task_class,
                "usage_pct_of_target": round(pct, 2),
                "limit_pct": round(limit, 2),
            }
    return None


def queue_length_limit(nr: int) -> int:
    """The most jobs queued at an analysis queue (PanDA's nQueue) before the brokerage skips
    it: twice its running jobs, at least 40. The pages show this same number."""
    return 2 * max(20, nr)


# --- the Analysis Stabilizer ---------------------------------------------------------------------


def stabilizer(
    nq: int, nr: int, trr: float, nq_user: int, nr_user: int, n_users: int, params: dict
) -> dict:
    """The seed's quantities for one queue and user: throttlable, nQ_max, percentage, max_q_len,
    and whether the user's queued jobs exceed max_q_len."""
    base = params["BASE_QUEUE_LENGTH_PER_PQ"]
    throttlable = not (nq < base or nq < params["BASE_EXPECTED_WAIT_HOUR_ON_PQ"] * trr)
    nq_max = max(
        base, params["STATIC_MAX_QUEUE_RUNNING_RATIO"] * nr, params["MAX_EXPECTED_WAIT_HOUR"] * trr
    )
    percentage = max(nr_user / nr if nr else 0.0, 1 / max(n_users, 1))
    max_q_len = max(
        params["BASE_DEFAULT_QUEUE_LENGTH_PER_PQ_USER"],
        params["BASE_QUEUE_RATIO_ON_PQ"] * nr,
        nq_max * percentage,
    )
    return {
        "nQ": nq,
        "nR": nr,
        "trr": round(trr, 3),
        "throttlable": throttlable,
        "nQ_max": round(nq_max, 3),
        "percentage": round(percentage, 4),
        "max_q_len": round(max_q_len, 3),
        "nQ_user": nq_user,
        "too_many": throttlable and nq_user > max_q_len,
    }


# --- weights -------------------------------------------------------------------------------------


def original_weight(q) -> tuple[float, dict]:
    c = q.counts
    running, source = production.effective_running(q)
    queued = (
        c.get("activated", 0) + c.get("assigned", 0) + c.get("starting", 0) + c.get("defined", 0)
    )
    return (running + 1) / (queued + 1), {
        "running": running,
        "running_from": source,
        "queued": queued,
        "formula": "original",
    }


def site_class_weight(
    task_class: str, site_class: str, n_jobs: int, eps1: float, eps2: float
) -> float:
    """W_s: the seed's table (S or A prefer hi sites, B mid, C lo)."""
    table = {
        "S": {"hi": n_jobs, "mid": eps1, "lo": eps2},
        "A": {"hi": n_jobs, "mid": eps1, "lo": eps2},
        "B": {"hi": eps2, "mid": n_jobs, "lo": eps1},
        "C": {"hi": eps2, "mid": eps1, "lo": n_jobs},
    }
    return table.get(task_class, table["A"])[site_class]


def new_weights(task, rows: list[tuple[Any, dict]], n_jobs: int, params: dict) -> list[tuple]:
    """W_s × W_q for each (queue, stabilizer) row: (weight, factors)."""
    n_pq = len(rows)
    room = [st["max_q_len"] - st["nQ_user"] for _, st in rows]
    denominator = sum(room) - n_jobs
    out = []
    for (q, st), r in zip(rows, room, strict=True):
        if task.gshare in CLASSED_SHARES:
            ws = site_class_weight(
                task.task_class,
                q.site_class,
                n_jobs,
                params["ANALY_WEIGHT_EPSILON_1"],
                params["ANALY_WEIGHT_EPSILON_2"],
            )
        else:
            ws = n_jobs
        wq = (r - n_jobs / n_pq) / denominator if denominator > 0 else 1 / n_pq
        w = ws * max(wq, 0.0) + TINY
        out.append(
            (
                w,
                {
                    "formula": "new",
                    "Ws": ws,
                    "Wq": round(wq, 6),
                    "site_class": q.site_class,
                    "task_class": task.task_class,
                    "max_q_len": st["max_q_len"],
                    "nQ_user": st["nQ_user"],
                    "Nj": n_jobs,
                },
            )
        )
    return out


# --- the brokerage -------------------------------------------------------------------------------


@dataclass
class AnalysisContext(JobContext):
    user_counts: dict[int, Counter] = field(default_factory=dict)  # queue id → the user's counts
    n_users: dict[int, int] = field(default_factory=dict)
    trr: dict[int, float] = field(default_factory=dict)  # jobs started per hour, last 6 h
    task_done: dict[int, Counter] = field(default_factory=dict)  # the task's recent final jobs
    local_data: dict[str, bool] = field(default_factory=dict)  # queue name → all input local
    has_input: bool = False
    last_success: Any = None
    n_jobs: int = 1
    grand_ratio: float = float("inf")  # Σ queued / Σ running over every queue (VP overload)


def _in(name: str, entries: list[str]) -> bool:
    for e in entries:
        if "*" in e:
            if re.search(e.replace("*", ".*"), name):
                return True
        elif e == name:
            return True
    return False


def locality_suppressed(task, ctx: AnalysisContext) -> str | None:
    p = ctx.params
    if task.priority >= 2000:
        return "taskPriority ≥ 2000"
    cutoff = p["IO_INTENSITY_CUTOFF_USER"]
    if cutoff >= 0 and (task.io_intensity or 0) <= cutoff:
        return "ioIntensity ≤ IO_INTENSITY_CUTOFF_USER"
    hours = p["DATA_CHECK_TIMEOUT_USER"]
    if (
        hours > 0
        and ctx.last_success is not None
        and ctx.now - ctx.last_success > timedelta(hours=hours)
    ):
        return "last successful brokerage older than DATA_CHECK_TIMEOUT_USER"
    return None


def persistent_checks(with_locality: bool) -> list[checks.JobCheck]:
    if with_locality:
        return checks.ANALYSIS
    return [c for c in checks.ANALYSIS if c.name != "data_locality"]


def broker_analysis(task, queues: list, ctx: AnalysisContext, with_locality: bool = True):
    """Returns (decision, persistent_removed_all, stabilizer rows by queue name)."""
    spec = task.architecture_spec  # parsed at submission
    included = checks.listed(task.included_site) or checks.listed(task.site)
    excluded = checks.listed(task.excluded_site)
    live = [
        q
        for q in queues
        if q.queue_type in ANALYSIS_TYPES
        and not (excluded and _in(q.name, excluded))
        and not (included and not _in(q.name, included))
    ]
    total_q = sum(sum(q.counts.get(s, 0) for s in checks.PRE_MATCH) for q in queues)
    total_r = sum(q.counts.get("running", 0) for q in queues)
    ctx.grand_ratio = total_q / total_r if total_r else float("inf")
    for q in live:
        q.network = None
    ctx = replace(ctx, spec=spec)
    cands, survivors = production.first_failing(live, persistent_checks(with_locality), task, ctx)
    if not survivors:
        return Decision(cands, [], "every queue was skipped by persistent issues"), True, {}

    p = ctx.params
    stab = {}
    temp_ok = []
    since = p["TW_DONE_JOB_STAT"]
    for q, c in survivors:
        counts = q.counts
        done = ctx.task_done.get(q.pk, Counter())
        bad = done.get("failed", 0) + done.get("closed", 0)
        bad_limit = max(2 * done.get("finished", 0), p["MIN_BAD_JOBS_TO_SKIP_PQ"])
        nq = sum(counts.get(s, 0) for s in checks.PRE_MATCH)
        nr = counts.get("running", 0)
        user = ctx.user_counts.get(q.pk, Counter())
        nq_user = sum(user.get(s, 0) for s in checks.PRE_MATCH)
        st = stabilizer(
            nq,
            nr,
            ctx.trr.get(q.pk, 0.0),
            nq_user,
            user.get("running", 0),
            ctx.n_users.get(q.pk, 0),
            p,
        )
        stab[q.name] = st
        if bad >= bad_limit:
            c.remove("bad_jobs", failed_plus_closed=bad, limit=bad_limit, hours=since)
        elif nq > queue_length_limit(nr):
            c.remove("queue_length", queued=nq, limit=queue_length_limit(nr))
        elif st["too_many"]:
            c.remove(
                "stabilizer",
                nQ_user=nq_user,
                max_q_len=st["max_q_len"],
                nQ_max=st["nQ_max"],
                percentage=st["percentage"],
            )
        else:
            temp_ok.append((q, c))
    if not temp_ok:
        return Decision(cands, [], "every queue was skipped by temporary issues"), False, stab

    if p["ANALY_NEW_BASIC_WEIGHT"]:
        weighted = new_weights(task, [(q, stab[q.name]) for q, _ in temp_ok], ctx.n_jobs, p)
    else:
        weighted = [original_weight(q) for q, _ in temp_ok]
    for (_q, c), (w, factors) in zip(temp_ok, weighted, strict=True):
        c.weight, c.factors = w, factors
    temp_ok.sort(key=lambda qc: (-qc[1].weight, qc[0].name))
    for _q, c in temp_ok[production.BEST_CANDIDATES :]:
        c.remove("low_weight", weight=c.weight, rank_needed=production.BEST_CANDIDATES)
    best = temp_ok[: production.BEST_CANDIDATES]
    return Decision(cands, [q.name for q, _ in best]), False, stab
