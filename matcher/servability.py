"""Which waiting work some active CE can serve at all, by the matcher's own rule
(matcher.feasibility): per group and user for the Shares page (web.shares.overview calls
reach()), and per TaskQueue for its page and "why is my job not running" (the CE limits it
exceeds). Read-only; a bounded number of queries whatever the number of waiting jobs: the
TaskQueues' loads (one aggregate over the per-priority counts), their definitions, the CEs.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from matcher import feasibility, matching, site_mask
from matcher.models import TaskQueue
from matcher.taskqueue_priorities import taskqueue_loads
from matcher.taskqueues import MULTI_VALUED_FIELDS

DEFINITION_FIELDS = ("id", "setup", "cpu_time", "priority", *MULTI_VALUED_FIELDS)
Key = tuple[int, int | None]  # (group, None) for a group, (group, user) for a user in it


@dataclass
class Reach:
    """How much of the waiting work can run at all, per (group, user|None)."""

    servable: dict[Key, int] = field(default_factory=dict)  # waiting jobs some active CE serves
    blocked: dict[Key, dict[str, int]] = field(default_factory=dict)  # rule -> jobs no CE serves
    slots: dict[Key, int] = field(default_factory=dict)  # slots of the CEs that could take some
    rank: dict[Key, int] = field(default_factory=dict)  # its best TaskQueue's rank by priority
    ranked: int = 0  # TaskQueues with waiting jobs
    segments: dict[Key, dict[int, int]] = field(default_factory=dict)  # CPU segment -> servable


@dataclass(frozen=True)
class ActiveCE:
    resource: matching.Resource  # what any pilot on it presents
    slots: int  # its max_running_pilots


def active_ces() -> list[ActiveCE]:
    rows = site_mask.unmasked_ces()  # a banned site or CE serves nothing
    return [ActiveCE(matching.ce_resource(ce), ce.max_running_pilots) for ce in rows]


def _signature(tq) -> tuple[str, int, dict[str, tuple[str, ...]]]:
    """(setup, CPU segment, requirements) of a TaskQueue row, definition or values() dict."""

    def get(name: str):
        return tq.get(name, ()) if isinstance(tq, dict) else getattr(tq, name, ())

    req = {f: tuple(sorted(get(f) or ())) for f in MULTI_VALUED_FIELDS}
    return get("setup"), int(get("cpu_time")), req


def shortfalls(tq, ces: Sequence[matching.Resource] | None = None) -> list[feasibility.Shortfall]:
    """Why no active CE can serve this TaskQueue (a TaskQueue row or definition), each with
    the CE limits it exceeds; empty when some CE can."""
    if ces is None:
        ces = [c.resource for c in active_ces()]
    setup, segment, req = _signature(tq)
    return feasibility.shortfalls(setup, segment, req, ces)


def flag_sentence(tq_id: int, found: Iterable[feasibility.Shortfall]) -> str:
    return f"No active CE can serve TQ {tq_id}: " + "; ".join(s.text for s in found) + "."


def _add(d: dict, key, n: int) -> None:
    d[key] = d.get(key, 0) + n


def reach() -> Reach:
    """Per (group, None) and (group, user): the waiting jobs some active CE can serve, those it
    cannot by the first failing rule, the slots of the CEs that could take some of them, and its
    best TaskQueue's rank by priority among the TaskQueues with waiting jobs, and its servable
    waiting jobs per CPU segment."""
    loads = {t.id: t for t in taskqueue_loads() if t.jobs > 0}
    if not loads:
        return Reach()
    defs = [d for d in TaskQueue.objects.values(*DEFINITION_FIELDS).order_by() if d["id"] in loads]
    ces = active_ces()
    resources = [c.resource for c in ces]
    out = Reach(ranked=len(defs))
    ordered = sorted(-d["priority"] for d in defs)
    able_ces: dict[tuple, set[int]] = {}  # entity -> indexes of the CEs that serve some of it
    seen: dict[tuple, tuple[list[int], str]] = {}  # requirements -> (CEs, first failing rule)
    for d in defs:
        load = loads[d["id"]]
        setup, segment, req = _signature(d)
        sig = (setup, segment, tuple(req.items()))
        if sig not in seen:
            served = {id(r) for r in feasibility.serving(setup, segment, req, resources)}
            able = [i for i, r in enumerate(resources) if id(r) in served]
            rule = "" if able else feasibility.shortfalls(setup, segment, req, resources)[0].rule
            seen[sig] = (able, rule)
        able, rule = seen[sig]
        rank = bisect_left(ordered, -d["priority"]) + 1  # 1 + the strictly higher ones
        for key in ((load.group_id, None), (load.group_id, load.owner_id)):
            if able:
                _add(out.servable, key, load.jobs)
                _add(out.segments.setdefault(key, {}), segment, load.jobs)
                able_ces.setdefault(key, set()).update(able)
            else:
                _add(out.blocked.setdefault(key, {}), rule, load.jobs)
            out.rank[key] = min(rank, out.rank.get(key, rank))
    out.slots = {key: sum(ces[i].slots for i in idx) for key, idx in able_ces.items()}
    return out


def taskqueue_flag(user, tq_id: int, past: bool) -> dict:
    """The TaskQueue page's flag when no active CE can serve it, with the limits it exceeds."""
    if past:
        return {}
    tq = TaskQueue.objects.filter(pk=tq_id).values(*DEFINITION_FIELDS).first()
    return {"unservable": shortfalls(tq) if tq else []}
