"""Which waiting work some active CE can serve at all, by the matcher's own rule
(matcher.feasibility): per group and user for the Shares page (web.shares.overview calls
reach()), and per TaskQueue for its page and "why is my job not running" (the CE limits it
exceeds). Read-only; a bounded number of queries whatever the number of waiting jobs: the
TaskQueues' loads (one aggregate over the per-priority counts), their definitions, the CEs.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import connection

from matcher import feasibility, matching, site_mask
from matcher.models import TaskQueue
from matcher.taskqueue_priorities import taskqueue_loads
from matcher.taskqueues import MULTI_VALUED_FIELDS
from shares.priorities import TaskQueueLoad

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


# What each distinct definition's verdict is against the active CEs: per process, for the CEs
# it was found with (any change of the CEs starts it again), keyed by the hash of the definition
# as the database spells it, so that a TaskQueue seen before costs a dictionary lookup, not a
# parse and a match against every CE.
_verdicts: dict[str, tuple[list[int], str]] = {}
_verdicts_for: tuple[matching.Resource, ...] = ()
_VERDICTS_KEPT = 100_000

# A definition as the database spells it, hashed: what the kept verdicts are keyed by (the
# definitions themselves are read only for the TaskQueues whose hash is not known yet).
_DEFINITION_TEXT = "concat_ws(chr(31), setup, cpu_time::text, {})".format(
    ", ".join(f"{f}::text" for f in MULTI_VALUED_FIELDS)
)
_TABLE = TaskQueue._meta.db_table
_DEFINITIONS_SQL = f"SELECT id, priority, cpu_time, md5({_DEFINITION_TEXT}) FROM {_TABLE}"
_NEW_DEFINITIONS_SQL = (
    f"SELECT DISTINCT ON (1) md5({_DEFINITION_TEXT}), setup, cpu_time, "
    + ", ".join(f"{f}::text" for f in MULTI_VALUED_FIELDS)
    + f" FROM {_TABLE} WHERE id = ANY(%s)"
)


def _verdicts_against(resources: tuple[matching.Resource, ...]) -> dict[str, tuple[list[int], str]]:
    """The kept verdicts for these CEs (none kept for others any more)."""
    global _verdicts, _verdicts_for
    if resources != _verdicts_for or len(_verdicts) > _VERDICTS_KEPT:
        _verdicts, _verdicts_for = {}, resources
    return _verdicts


def _verdict(raw: tuple, resources: tuple[matching.Resource, ...]) -> tuple[list[int], str]:
    """(indexes of the CEs that serve a definition, the first failing rule when none does), for
    (setup, cpu_time, *the multi-valued fields as JSON text)."""
    setup, segment, req = _signature(_parsed(raw))
    served = {id(r) for r in feasibility.serving(setup, segment, req, resources)}
    able = [i for i, r in enumerate(resources) if id(r) in served]
    rule = "" if able else feasibility.shortfalls(setup, segment, req, resources)[0].rule
    return able, rule


def _parsed(raw: tuple) -> dict:
    setup, cpu_time, *texts = raw
    values = {
        f: json.loads(t) if t else None for f, t in zip(MULTI_VALUED_FIELDS, texts, strict=True)
    }
    return {"setup": setup, "cpu_time": cpu_time, **values}


def reach(loads: Sequence[TaskQueueLoad] | None = None) -> Reach:
    """Per (group, None) and (group, user): the waiting jobs some active CE can serve, those it
    cannot by the first failing rule, the slots of the CEs that could take some of them, and its
    best TaskQueue's rank by priority among the TaskQueues with waiting jobs, and its servable
    waiting jobs per CPU segment. `loads`: the TaskQueues' loads if already read
    (taskqueue_loads())."""
    by_id = {t.id: t for t in (taskqueue_loads() if loads is None else loads) if t.jobs > 0}
    if not by_id:
        return Reach()
    ces = active_ces()
    resources = tuple(c.resource for c in ces)
    verdicts = _verdicts_against(resources)
    with connection.cursor() as cur:
        cur.execute(_DEFINITIONS_SQL)
        defs = [row for row in cur.fetchall() if row[0] in by_id]
        # Always asked (often for none): as many queries whatever was seen before.
        unknown = [row[0] for row in defs if row[3] not in verdicts]
        cur.execute(_NEW_DEFINITIONS_SQL, [unknown])
        for digest, *raw in cur.fetchall():
            verdicts[digest] = _verdict(tuple(raw), resources)
    out = Reach(ranked=len(defs))
    ordered = sorted(-row[1] for row in defs)
    # Per user first (one entry per TaskQueue), then each group from its users.
    servable, segments, blocked = out.servable, out.segments, out.blocked
    able_ces: dict[tuple, set[int]] = {}  # entity -> indexes of the CEs that serve some of it
    ranks = out.rank
    for tq_id, priority, segment, digest in defs:
        load = by_id[tq_id]
        able, rule = verdicts[digest]
        key = (load.group_id, load.owner_id)
        n = load.jobs
        if able:
            servable[key] = servable.get(key, 0) + n
            per = segments.get(key)
            if per is None:
                per = segments[key] = {}
            per[segment] = per.get(segment, 0) + n
            found = able_ces.get(key)
            if found is None:
                able_ces[key] = set(able)
            else:
                found.update(able)
        else:
            per = blocked.get(key)
            if per is None:
                per = blocked[key] = {}
            per[rule] = per.get(rule, 0) + n
        rank = bisect_left(ordered, -priority) + 1  # 1 + the strictly higher ones
        if rank < ranks.get(key, rank + 1):
            ranks[key] = rank
    for key in list(ranks):
        group = (key[0], None)
        ranks[group] = min(ranks[key], ranks.get(group, ranks[key]))
        if key in servable:
            _add(servable, group, servable[key])
            for seg, n in segments[key].items():
                _add(segments.setdefault(group, {}), seg, n)
            able_ces.setdefault(group, set()).update(able_ces[key])
        for rule, n in blocked.get(key, {}).items():
            _add(blocked.setdefault(group, {}), rule, n)
    out.slots = {key: sum(ces[i].slots for i in idx) for key, idx in able_ces.items()}
    return out


def taskqueue_flag(user, tq_id: int, past: bool) -> dict:
    """The TaskQueue page's flag when no active CE can serve it, with the limits it exceeds."""
    if past:
        return {}
    tq = TaskQueue.objects.filter(pk=tq_id).values(*DEFINITION_FIELDS).first()
    return {"unservable": shortfalls(tq) if tq else []}
