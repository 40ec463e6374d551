"""The fair-share picture for admins: per group and per user, the expected share, the achieved
share (running jobs), the corrections, and their history for the charts. Read-only.

The shares own the page (shares.views.shares_page) and GET /api/v1/shares/; what they show of
the work waiting to run comes from the apps that hold it, through the registry below (the
matcher fills it in its AppConfig.ready()), so that this app imports none of them:

- register_waiting_source(name, fn): fn() -> Waiting, the waiting jobs, TaskQueues and users
  per group; the sources' figures add up, and with none registered nothing waits.
- register_page_section(name, fn): fn(request) -> the value the Shares page's template finds
  under `name` (the matcher's "taskqueues": its TaskQueues by priority).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from django.http import HttpRequest

from config import clock, gdpconfig
from shares.models import CorrectionRecord, GridGroup, UsageSample, UsageTick, User
from shares.services import average_usage


@dataclass
class Waiting:
    """The work waiting to run, as the shares count it."""

    users: dict[int, set[int]] = field(default_factory=dict)  # group -> its users with waiting jobs
    jobs: dict[tuple[int, int | None], int] = field(default_factory=dict)  # (group, user|None)
    taskqueues: dict[int, int] = field(default_factory=dict)  # group -> queues with waiting jobs


WAITING_SOURCES: dict[str, Callable[[], Waiting]] = {}
PAGE_SECTIONS: dict[str, Callable[[HttpRequest], object]] = {}


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
                    }
                )
        rows.append(row)
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
