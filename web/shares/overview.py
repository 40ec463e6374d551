"""The fair-share picture for admins: per group and per user, the expected share, the achieved
share (running jobs), the corrections, and their history for the charts. Read-only.

The shares own the page (web.shares.views.shares_page) and GET /api/v1/shares/; what they show of
the work waiting to run comes from the apps that hold it, through the registry below (the
matcher fills it in its AppConfig.ready()), so that this app imports none of them:

- register_waiting_source(name, fn): fn() -> Waiting, the waiting jobs, TaskQueues and users
  per group; the sources' figures add up, and with none registered nothing waits.
- register_page_section(name, fn): fn(request) -> the value the Shares page's template finds
  under `name` (the matcher's "taskqueues": its TaskQueues by priority).
- register_reach_source(name, fn): fn() -> Reach, per group and user how much of the waiting
  work some active CE can serve, the slots that could take it and its TaskQueues' best rank
  (the matcher, from matcher.feasibility).
- register_pilot_source(name, fn): fn(since) -> PilotCounts, per group and user the pilots sent
  for its TaskQueues since then, those that found work and those that ended without (pilots).

With those figures each row says why it is off its share (shares.explanations, pure).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.http import HttpRequest

from core import clock, gdpconfig
from shares import corrections, explanations
from shares.models import CorrectionRecord, GridGroup, UsageSample, UsageTick, User
from shares.services import average_usage

Key = tuple[int, int | None]  # (group, None) for a group, (group, user) for a user in it


@dataclass
class Waiting:
    """The work waiting to run, as the shares count it."""

    users: dict[int, set[int]] = field(default_factory=dict)  # group -> its users with waiting jobs
    jobs: dict[tuple[int, int | None], int] = field(default_factory=dict)  # (group, user|None)
    taskqueues: dict[int, int] = field(default_factory=dict)  # group -> queues with waiting jobs


@dataclass
class Reach:
    """How much of the waiting work can run at all, per (group, user|None)."""

    servable: dict[Key, int] = field(default_factory=dict)  # waiting jobs some active CE serves
    blocked: dict[Key, dict[str, int]] = field(default_factory=dict)  # rule -> jobs no CE serves
    slots: dict[Key, int] = field(default_factory=dict)  # slots of the CEs that could take some
    rank: dict[Key, int] = field(default_factory=dict)  # its best TaskQueue's rank by priority
    ranked: int = 0  # TaskQueues with waiting jobs
    segments: dict[Key, dict[int, int]] = field(default_factory=dict)  # CPU segment -> servable


@dataclass
class PilotCounts:
    """Pilots sent for an entity's TaskQueues since a moment, per (group, user|None)."""

    sent: dict[Key, int] = field(default_factory=dict)
    found_work: dict[Key, int] = field(default_factory=dict)  # claimed a job
    no_work: dict[Key, int] = field(default_factory=dict)  # ended without claiming one


WAITING_SOURCES: dict[str, Callable[[], Waiting]] = {}
PAGE_SECTIONS: dict[str, Callable[[HttpRequest], object]] = {}
REACH_SOURCES: dict[str, Callable[[], Reach]] = {}
PILOT_SOURCES: dict[str, Callable[[datetime], PilotCounts]] = {}
PILOT_WINDOW_S = 3600  # "pilots sent in the last hour"


def register_reach_source(name: str, fn: Callable[[], Reach]) -> Callable[[], Reach]:
    """fn() -> Reach; registering a name again replaces its source."""
    REACH_SOURCES[name] = fn
    return fn


def register_pilot_source(
    name: str, fn: Callable[[datetime], PilotCounts]
) -> Callable[[datetime], PilotCounts]:
    """fn(since) -> PilotCounts; registering a name again replaces its source."""
    PILOT_SOURCES[name] = fn
    return fn


def _added(dicts: list[dict]) -> dict:
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


def reach() -> Reach:
    """What every registered source says of the waiting work's reach, added up (the best rank
    of any source)."""
    parts = [fn() for fn in REACH_SOURCES.values()]
    blocked: dict[Key, dict[str, int]] = {}
    for p in parts:
        for key, rules in p.blocked.items():
            blocked[key] = _added([blocked.get(key, {}), rules])
    rank: dict[Key, int] = {}
    segments: dict[Key, dict[int, int]] = {}
    for p in parts:
        for key, r in p.rank.items():
            rank[key] = min(r, rank.get(key, r))
        for key, by_segment in p.segments.items():
            segments[key] = _added([segments.get(key, {}), by_segment])
    return Reach(
        servable=_added([p.servable for p in parts]),
        blocked=blocked,
        slots=_added([p.slots for p in parts]),
        rank=rank,
        ranked=sum(p.ranked for p in parts),
        segments=segments,
    )


def pilot_counts(since: datetime) -> PilotCounts:
    parts = [fn(since) for fn in PILOT_SOURCES.values()]
    return PilotCounts(
        sent=_added([p.sent for p in parts]),
        found_work=_added([p.found_work for p in parts]),
        no_work=_added([p.no_work for p in parts]),
    )


def register_waiting_source(name: str, fn: Callable[[], Waiting]) -> Callable[[], Waiting]:
    """fn() -> Waiting; registering a name again replaces its source."""
    WAITING_SOURCES[name] = fn
    return fn


def register_page_section(
    name: str, fn: Callable[[HttpRequest], object]
) -> Callable[[HttpRequest], object]:
    """fn(request) -> the Shares page's template variable `name` (never one of the page's own);
    registering a name again replaces its section."""
    PAGE_SECTIONS[name] = fn
    return fn


def waiting() -> Waiting:
    """What every registered source says waits, added up."""
    total = Waiting()
    for fn in WAITING_SOURCES.values():
        w = fn()
        for g, users in w.users.items():
            if users:
                total.users.setdefault(g, set()).update(users)
        for key, n in w.jobs.items():
            total.jobs[key] = total.jobs.get(key, 0) + n
        for g, n in w.taskqueues.items():
            total.taskqueues[g] = total.taskqueues.get(g, 0) + n
    return total


def page_sections(request: HttpRequest) -> dict[str, object]:
    return {name: fn(request) for name, fn in PAGE_SECTIONS.items()}


ACHIEVED_WINDOW_S = 3600  # "achieved" in the table: the running-jobs share over the last hour


def _latest_corrections() -> dict:
    last = CorrectionRecord.objects.order_by("-at").values_list("at", flat=True).first()
    if last is None:
        return {}
    return {(r.group_id, r.user_id): r for r in CorrectionRecord.objects.filter(at=last)}


def _clamps(corr: dict) -> dict[Key, str | None]:
    """Whether each entity's correction in force is at a clamp of its corrector instance (as
    configured now; an instance since removed: only its slices' clamps are unknown too)."""
    if not corr:
        return {}
    try:
        instances = {i.name: i for i in corrections.parse_instances(gdpconfig.get("WMSHistory"))}
    except ValueError:
        instances = {}
    out: dict[Key, str | None] = {}
    for key, r in corr.items():
        inst = instances.get(r.instance)
        out[key] = explanations.clamp_side(
            r.factor,
            r.slices or {},
            inst.max_global_correction if inst else None,
            {s.name: s.max_correction for s in inst.slices} if inst else {},
        )
    return out


def _reach_facts(key: Key, found: Reach, pilots: PilotCounts, clamps: dict) -> dict:
    """The figures that say why an entity is where it is, as the page and the API show them."""
    return {
        "servable_jobs": found.servable.get(key, 0),
        "blocked": dict(sorted(found.blocked.get(key, {}).items())),
        "slots": found.slots.get(key, 0),
        "pilots_sent": pilots.sent.get(key, 0),
        "pilots_found_work": pilots.found_work.get(key, 0),
        "pilots_no_work": pilots.no_work.get(key, 0),
        "rank": found.rank.get(key),
        "ranked": found.ranked,
        "clamp": clamps.get(key),
        "segments": dict(sorted(found.segments.get(key, {}).items())),
    }


def _facts(label: str, row: dict) -> explanations.EntityFacts:
    return explanations.EntityFacts(
        label=label,
        expected=row["expected"],
        achieved=row["achieved"],
        running=row["running"],
        waiting_jobs=row["waiting_jobs"],
        servable_jobs=row["servable_jobs"],
        blocked=row["blocked"],
        slots=row["slots"],
        pilots_sent=row["pilots_sent"],
        pilots_found_work=row["pilots_found_work"],
        pilots_no_work=row["pilots_no_work"],
        rank=row["rank"],
        ranked=row["ranked"],
        correction=row["correction"].factor if row["correction"] else None,
        clamp=row["clamp"],
        segments=row["segments"],
    )


def _explain(rows: list[dict], running_total: float) -> None:
    """Each row's main reason for being off its share (None when it is not), groups among
    the groups and a group's users among its users."""
    rules = {
        "per_job_term": gdpconfig.get("PilotsPerJobTerm"),
        "segment_precedence": gdpconfig.get("MatchCPUSegmentPrecedence"),
    }

    def scope(peers: str, running: float, entities: list[dict]) -> explanations.Scope:
        return explanations.Scope(
            peers,
            running,
            sum(e["pilots_sent"] for e in entities),
            waiting_jobs=sum(e["waiting_jobs"] for e in entities),
            **rules,
        )

    groups = scope("groups", running_total, rows)
    found = explanations.reasons([_facts(r["group"].name, r) for r in rows], groups)
    for row, reason in zip(rows, found, strict=True):
        row["reason"] = reason
        users = row["users"]
        if not users:
            continue
        of_group = scope(f"users of {row['group'].name}", row["running"], users)
        found_u = explanations.reasons([_facts(u["user"].username, u) for u in users], of_group)
        for u, reason_u in zip(users, found_u, strict=True):
            u["reason"] = reason_u


def overview() -> dict:
    now_waiting = waiting()
    waiting_users = now_waiting.users
    jobs_by_entity = now_waiting.jobs
    tqs_by_group = now_waiting.taskqueues
    groups = list(GridGroup.objects.order_by("name"))
    total_share = sum(g.job_share for g in groups if g.pk in waiting_users) or 0.0
    usage = average_usage(ACHIEVED_WINDOW_S)
    running_total = sum(v for (g, u), v in usage.items() if u is None)
    corr = _latest_corrections() if gdpconfig.get("EnableSharesCorrection") else {}
    users = {
        u.pk: u for u in User.objects.filter(pk__in={u for s in waiting_users.values() for u in s})
    }
    found = reach()
    pilots = pilot_counts(clock.now() - timedelta(seconds=PILOT_WINDOW_S))
    clamps = _clamps(corr)
    rows = []
    for g in groups:
        group_running = usage.get((g.pk, None), 0.0)
        row = {
            "group": g,
            "waiting_jobs": jobs_by_entity.get((g.pk, None), 0),
            "taskqueues": tqs_by_group.get(g.pk, 0),
            "expected": g.job_share / total_share
            if g.pk in waiting_users and total_share
            else None,
            "achieved": group_running / running_total if running_total else None,
            "running": group_running,
            "correction": corr.get((g.pk, None)),
            **_reach_facts((g.pk, None), found, pilots, clamps),
            "users": [],
        }
        if not g.job_sharing and g.pk in waiting_users:
            n_users = len(waiting_users[g.pk])
            for uid in sorted(waiting_users[g.pk], key=lambda u: users[u].username):
                user_running = usage.get((g.pk, uid), 0.0)
                row["users"].append(
                    {
                        "user": users[uid],
                        "waiting_jobs": jobs_by_entity.get((g.pk, uid), 0),
                        "expected": 1.0 / n_users,
                        "achieved": user_running / group_running if group_running else None,
                        "running": user_running,
                        "correction": corr.get((g.pk, uid)),
                        **_reach_facts((g.pk, uid), found, pilots, clamps),
                    }
                )
        rows.append(row)
    _explain(rows, running_total)
    return {"rows": rows, "running_total": running_total, "correction_on": bool(corr)}


def share_history(hours: int = 24) -> dict:
    """Achieved share per group per tick, and the expected share (JobShare fraction of the
    groups that ran or waited), for the expected-vs-achieved chart."""
    since = clock.now() - timedelta(hours=hours)
    ticks = list(UsageTick.objects.filter(at__gte=since).order_by("at"))
    per_tick: dict[int, dict[int, float]] = defaultdict(dict)
    for tick_id, group_id, running in UsageSample.objects.filter(
        tick__in=ticks, user__isnull=True
    ).values_list("tick_id", "group_id", "running"):
        per_tick[tick_id][group_id] = running
    groups = list(GridGroup.objects.order_by("name"))
    series = {}
    for g in groups:
        xs, ys = [], []
        for t in ticks:
            total = sum(per_tick[t.pk].values())
            if total:
                xs.append(t.at)
                ys.append(per_tick[t.pk].get(g.pk, 0.0) / total)
        if xs:
            series[g.name] = (xs, ys)
    waiting_groups = set(waiting().users)
    total_share = sum(g.job_share for g in groups if g.pk in waiting_groups)
    expected = {
        g.name: g.job_share / total_share for g in groups if g.pk in waiting_groups and total_share
    }
    return {"achieved": series, "expected": expected}


def correction_history(hours: int = 24) -> dict:
    """{entity label: ([times], [factors])} for the corrections-over-time chart."""
    since = clock.now() - timedelta(hours=hours)
    out: dict[str, tuple[list, list]] = {}
    rows = (
        CorrectionRecord.objects.filter(at__gte=since)
        .select_related("group", "user")
        .order_by("at")
    )
    for r in rows:
        label = r.group.name if r.user is None else f"{r.group.name}/{r.user.username}"
        xs, ys = out.setdefault(label, ([], []))
        xs.append(r.at)
        ys.append(r.factor)
    return out
