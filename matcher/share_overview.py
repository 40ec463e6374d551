"""The fair-share picture for admins: per group and per user, the expected share, the achieved
share (running jobs), the corrections, and their history for the charts. Read-only."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from config import clock, gdpconfig
from matcher.priorities import taskqueue_loads, waiting_entities
from shares.models import CorrectionRecord, GridGroup, UsageSample, UsageTick, User

ACHIEVED_WINDOW_S = 3600  # "achieved" in the table: the running-jobs share over the last hour


def _latest_corrections() -> dict:
    last = CorrectionRecord.objects.order_by("-at").values_list("at", flat=True).first()
    if last is None:
        return {}
    return {(r.group_id, r.user_id): r for r in CorrectionRecord.objects.filter(at=last)}


def overview() -> dict:
    from shares.services import average_usage

    loads = taskqueue_loads()
    waiting = waiting_entities(loads)
    jobs_by_entity: dict[tuple, int] = defaultdict(int)
    tqs_by_group: dict[int, int] = defaultdict(int)
    for tq in loads:
        if tq.jobs > 0:
            jobs_by_entity[(tq.group_id, None)] += tq.jobs
            jobs_by_entity[(tq.group_id, tq.owner_id)] += tq.jobs
            tqs_by_group[tq.group_id] += 1
    groups = list(GridGroup.objects.order_by("name"))
    total_share = sum(g.job_share for g in groups if g.pk in waiting) or 0.0
    usage = average_usage(ACHIEVED_WINDOW_S)
    running_total = sum(v for (g, u), v in usage.items() if u is None)
    corr = _latest_corrections() if gdpconfig.get("EnableSharesCorrection") else {}
    users = {u.pk: u for u in User.objects.filter(pk__in={u for s in waiting.values() for u in s})}
    rows = []
    for g in groups:
        group_running = usage.get((g.pk, None), 0.0)
        row = {
            "group": g,
            "waiting_jobs": jobs_by_entity.get((g.pk, None), 0),
            "taskqueues": tqs_by_group.get(g.pk, 0),
            "expected": g.job_share / total_share if g.pk in waiting and total_share else None,
            "achieved": group_running / running_total if running_total else None,
            "running": group_running,
            "correction": corr.get((g.pk, None)),
            "users": [],
        }
        if not g.job_sharing and g.pk in waiting:
            n_users = len(waiting[g.pk])
            for uid in sorted(waiting[g.pk], key=lambda u: users[u].username):
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
    waiting = set(waiting_entities(taskqueue_loads()))
    total_share = sum(g.job_share for g in groups if g.pk in waiting)
    expected = {
        g.name: g.job_share / total_share for g in groups if g.pk in waiting and total_share
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
