"""The fair-share picture for admins: per group and per user, the expected share, the achieved
share (running jobs), the corrections, and their history for the charts. Read-only.

The shares own the page (web.shares.views.shares_page) and GET /api/v1/shares/; what they show of
the work waiting to run is read here from the apps that hold it:

- waiting(): the waiting jobs, TaskQueues and users per group (the matcher's TaskQueues);
- taskqueues(request): its TaskQueues by priority, for the Shares page's table;
- matcher.servability.reach(): per group and user how much of the waiting work some active CE can
  serve, the slots that could take it and its TaskQueues' best rank;
- pilot_counts(since): per group and user the pilots sent for its TaskQueues since then, those
  that found work (and of those, the ones that ran only the others' jobs) and those that ended
  without;
- web.shares.why_sources: the director's decisions for its TaskQueues, its jobs held in
  brokerage, a recent JobShare change; and here, its correction's clamp with its parameter.

With those figures each row says why it is off its share (shares.explanations, pure).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Exists, OuterRef
from django.http import HttpRequest

from core import clock, gdpconfig
from matcher import servability
from matcher.models import Job, TaskQueue
from matcher.servability import Key, Reach
from matcher.taskqueue_priorities import taskqueue_loads, waiting_entities
from pilots.models import Pilot, PilotStatus
from shares import corrections, explanations
from shares.models import CorrectionRecord, GridGroup, UsageSample, UsageTick, User
from shares.services import average_usage
from web.matcher import selectors
from web.shares import why_sources

TOP_TASKQUEUES = 15  # the Shares page's "TaskQueue priorities" table
PILOT_WINDOW_S = 3600  # "pilots sent in the last hour"


@dataclass
class Waiting:
    """The work waiting to run, as the shares count it."""

    users: dict[int, set[int]] = field(default_factory=dict)  # group -> its users with waiting jobs
    jobs: dict[tuple[int, int | None], int] = field(default_factory=dict)  # (group, user|None)
    taskqueues: dict[int, int] = field(default_factory=dict)  # group -> queues with waiting jobs


@dataclass
class PilotCounts:
    """Pilots sent for an entity's TaskQueues since a moment, per (group, user|None)."""

    sent: dict[Key, int] = field(default_factory=dict)
    found_work: dict[Key, int] = field(default_factory=dict)  # claimed a job
    elsewhere: dict[Key, int] = field(default_factory=dict)  # of those, only others' jobs
    no_work: dict[Key, int] = field(default_factory=dict)  # ended without claiming one


def waiting(loads: list | None = None) -> Waiting:
    """Per group, the users with waiting jobs, the waiting jobs (per group and per user) and
    the TaskQueues that hold them, from one read of the TaskQueues' loads (`loads`, if read
    already)."""
    loads = taskqueue_loads() if loads is None else loads
    w = Waiting(users=dict(waiting_entities(loads)))
    for tq in loads:
        if tq.jobs > 0:
            for key in ((tq.group_id, None), (tq.group_id, tq.owner_id)):
                w.jobs[key] = w.jobs.get(key, 0) + tq.jobs
            w.taskqueues[tq.group_id] = w.taskqueues.get(tq.group_id, 0) + 1
    return w


def taskqueues(request: HttpRequest) -> list[TaskQueue]:
    """The TaskQueues the user may see, highest priority first, each with `unservable`: why no
    active CE can serve it (empty when some can)."""
    rows = list(
        selectors.taskqueues_with_counts(TaskQueue.objects.visible_to(request.user)).order_by(
            "-priority", "id"
        )[:TOP_TASKQUEUES]
    )
    ces = [c.resource for c in servability.active_ces()] if rows else []
    for tq in rows:
        tq.unservable = servability.shortfalls(tq, ces)
    return rows


def pilot_counts(since: datetime) -> PilotCounts:
    """Per group and user, the pilots sent for its TaskQueues since then, those that claimed a
    job (and of those, the ones whose jobs were all the other entities') and those that ended
    without one. One aggregate query: each pilot's entity is its TaskQueue's owner and group,
    or, for a TaskQueue since removed, those of the jobs that were in it."""
    mine = Job.objects.filter(pilot_id=OuterRef("pk"))
    rows = (
        Pilot.objects.filter(submitted__gte=since)
        .annotate(
            g=why_sources.of_taskqueue("owner_group_id"),
            u=why_sources.of_taskqueue("owner_id"),
        )
        .annotate(
            found=Exists(mine),
            own_g=Exists(mine.filter(owner_group_id=OuterRef("g"))),
            own_u=Exists(mine.filter(owner_group_id=OuterRef("g"), owner_id=OuterRef("u"))),
        )
        .order_by()
        .values("g", "u", "found", "own_g", "own_u", "status")
        .annotate(n=Count("id"))
    )
    out = PilotCounts()
    for r in rows:
        if r["g"] is None:
            continue  # a TaskQueue nothing refers to any more
        for key, own in (((r["g"], None), r["own_g"]), ((r["g"], r["u"]), r["own_u"])):
            out.sent[key] = out.sent.get(key, 0) + r["n"]
            if r["found"]:
                out.found_work[key] = out.found_work.get(key, 0) + r["n"]
                if not own:
                    out.elsewhere[key] = out.elsewhere.get(key, 0) + r["n"]
            elif r["status"] == PilotStatus.DONE:
                out.no_work[key] = out.no_work.get(key, 0) + r["n"]
    return out


ACHIEVED_WINDOW_S = 3600  # "achieved" in the table: the running-jobs share over the last hour


def _latest_corrections() -> dict:
    last = CorrectionRecord.objects.order_by("-at").values_list("at", flat=True).first()
    if last is None:
        return {}
    return {(r.group_id, r.user_id): r for r in CorrectionRecord.objects.filter(at=last)}


def _instances() -> list[corrections.Instance]:
    try:
        return corrections.parse_instances(gdpconfig.get("WMSHistory"))
    except ValueError:
        return []


def _clamps(corr: dict, configured: list[corrections.Instance]) -> dict[Key, explanations.Clamp]:
    """Each entity's correction in force at a clamp of its corrector instance (as configured
    now; an instance since removed: only its slices' clamps are unknown too), with the bound."""
    instances = {i.name: i for i in configured}
    out: dict[Key, explanations.Clamp] = {}
    for key, r in corr.items():
        inst = instances.get(r.instance)
        found = explanations.clamp_at(
            r.factor,
            r.slices or {},
            inst.max_global_correction if inst else None,
            {s.name: s.max_correction for s in inst.slices} if inst else {},
            r.instance,
        )
        if found:
            out[key] = found
    return out


@dataclass
class Sources:
    """What the rows' "why" figures are read from, once per overview."""

    reach: Reach
    pilots: PilotCounts
    clamps: dict[Key, explanations.Clamp]
    director: dict[Key, explanations.DirectorFacts]
    held: dict[Key, dict[str, int]]
    changes: dict[int, explanations.ShareChange]
    ran_by: dict[Key, tuple[int, int]]


def _why_title(blocked: dict[str, int], segments: dict[int, int]) -> str:
    """The Shares page's title of a row's servable figure: the waiting jobs no CE can serve by
    rule, and the servable ones by CPU segment (one string per row: a template loop per row
    costs more than the rest of the row)."""
    text = ""
    if blocked:
        text = "no active CE can serve:" + "".join(f" {r} {n}" for r, n in blocked.items())
        if segments:
            text += "; "
    if segments:
        text += "servable by CPU segment:" + "".join(f" {s} s {n}" for s, n in segments.items())
    return text


def _reach_facts(key: Key, src: Sources) -> dict:
    """The figures that say why an entity is where it is, as the page and the API show them."""
    found, pilots, clamp = src.reach, src.pilots, src.clamps.get(key)
    blocked = dict(sorted(found.blocked.get(key, {}).items()))
    segments = dict(sorted(found.segments.get(key, {}).items()))
    return {
        "servable_jobs": found.servable.get(key, 0),
        "blocked": blocked,
        "why_title": _why_title(blocked, segments),
        "slots": found.slots.get(key, 0),
        "pilots_sent": pilots.sent.get(key, 0),
        "pilots_found_work": pilots.found_work.get(key, 0),
        "pilots_no_work": pilots.no_work.get(key, 0),
        "rank": found.rank.get(key),
        "ranked": found.ranked,
        "clamp": clamp.side if clamp else None,
        "segments": segments,
        "pilots_elsewhere": pilots.elsewhere.get(key, 0),
        "pilots_ran_it": src.ran_by.get(key, (0, 0))[0],
        "pilots_ran_it_for_others": src.ran_by.get(key, (0, 0))[1],
        "clamp_detail": clamp,
        "director": src.director.get(key, explanations.DirectorFacts()),
        "held": src.held.get(key, {}),
        "share_change": src.changes.get(key[0]) if key[1] is None else None,
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
        clamp_detail=row["clamp_detail"],
        director=row["director"],
        pilots_elsewhere=row["pilots_elsewhere"],
        pilots_ran_it=row["pilots_ran_it"],
        pilots_ran_it_for_others=row["pilots_ran_it_for_others"],
        held=row["held"],
        share_change=row["share_change"],
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
            lam=sum(e["director"].lam for e in entities),
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
    loads = taskqueue_loads()  # read once: the waiting work and its reach
    now_waiting = waiting(loads)
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
    since = clock.now() - timedelta(seconds=PILOT_WINDOW_S)
    instances = _instances()
    src = Sources(
        reach=servability.reach(loads),
        pilots=pilot_counts(since),
        clamps=_clamps(corr, instances),
        director=why_sources.director(since),
        held=why_sources.held(),
        changes=why_sources.share_changes(instances, ACHIEVED_WINDOW_S),
        ran_by=why_sources.ran_by(since),
    )
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
            **_reach_facts((g.pk, None), src),
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
                        **_reach_facts((g.pk, uid), src),
                    }
                )
        rows.append(row)
    _explain(rows, running_total)
    return {
        "rows": rows,
        "running_total": running_total,
        "correction_on": bool(corr),
        "waiting_groups": set(waiting_users),
    }


def share_history(hours: int = 24, waiting_groups: set[int] | None = None) -> dict:
    """Achieved share per group per tick, and the expected share (JobShare fraction of the
    groups that ran or waited), for the expected-vs-achieved chart. `waiting_groups`: the
    groups with waiting jobs, if known (overview()'s)."""
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
    if waiting_groups is None:
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
