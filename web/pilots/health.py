"""The director's alerts in the home page's health panel (web/matcher/health.py): TaskQueues it
could not send pilots for (with its reason), submit pools that were full, pilot credentials
missing or running out, each linking to the director's decisions; and the home page's chart of
pilots per site; the pilots per site and CE (pilot_summary)."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import timedelta

from django.db.models import Count, Sum

from core import clock, gdpconfig
from core.models import CycleRun
from matcher.models import TaskQueue
from pilots import director
from pilots.models import Credential, DirectorDecision, Pilot, PilotStatus
from web.matcher import selectors
from web.pilots import charts

DIRECTOR_URL = "/pilots/director/"  # where the director's decisions are recorded
RECENT_CYCLES = 5  # a TaskQueue's pilots are drawn at random: a blocker shows within a few


def recent_director_runs(n: int = RECENT_CYCLES) -> list[int]:
    """The ids of the director's last n cycles, newest first (decisions are read by these:
    their cycle_run is indexed, their TaskQueue is not)."""
    return list(
        CycleRun.objects.filter(kind="director")
        .order_by("-started", "-id")
        .values_list("pk", flat=True)[:n]
    )


def blocked_taskqueues(user, runs: list[int]) -> list[tuple[str, str]]:
    """TaskQueues (still there, visible to the user) whose latest decision that drew pilots
    sent none for a reason of the director's own: no credential, unknown pool, no CE..."""
    tried: dict[int, DirectorDecision] = {}
    rows = DirectorDecision.objects.filter(cycle_run__in=runs, drawn__gt=0, cap__gt=0).order_by(
        "-cycle_run"
    )
    for d in rows.only("task_queue_id", "skipped", "cycle_run"):
        tried.setdefault(d.task_queue_id, d)
    blocked = {
        tq: note
        for tq, d in tried.items()
        if (note := director.blocker(d.skipped)) and not note.endswith(director.POOL_FULL)
    }
    tqs = selectors.taskqueues_with_counts(
        TaskQueue.objects.visible_to(user).filter(pk__in=list(blocked))
    ).order_by("-priority", "id")
    return [
        (
            f"TQ {tq.pk} ({tq.owner.username} / {tq.owner_group.name}, {tq.waiting_jobs} "
            f"waiting) gets no pilot: {blocked[tq.pk]}",
            f"{DIRECTOR_URL}?task_queue={tq.pk}",
        )
        for tq in tqs
    ]


def full_pools(runs: list[int]) -> list[tuple[str, str]]:
    if not runs:
        return []
    full = Counter()
    for skipped in DirectorDecision.objects.filter(
        cycle_run=runs[0], skipped__contains=director.POOL_FULL
    ).values_list("skipped", flat=True):
        note = director.blocker(skipped) or ""
        full[note.removeprefix("submit pool ").split(" ")[0]] += 1
    limit = gdpconfig.get("totalThreadsInPool")
    return [
        (
            f"Submit pool {pool} was full in the last director cycle: {n} TaskQueue"
            f"{'s' if n != 1 else ''} got no pilot (totalThreadsInPool = {limit})",
            DIRECTOR_URL,
        )
        for pool, n in sorted(full.items())
    ]


def credential_alerts(user) -> list[tuple[str, str]]:
    """The generic pilots' credential and those of the owners of the user's TaskQueues:
    missing or with less than PilotProxyMinDays left (the director then sends no such pilot),
    or with less than twice that (it soon will not)."""
    now = clock.now()
    min_days = gdpconfig.get("PilotProxyMinDays")
    generic = (gdpconfig.get("GenericPilotDN"), gdpconfig.get("GenericPilotGroup"))
    tqs = TaskQueue.objects.visible_to(user).exclude(owner__dn=None)
    if gdpconfig.get("PrivatePilotFraction") == 0:  # private pilots only where asked for
        tqs = tqs.filter(pilot_types__icontains='"private"')
    owners = set(tqs.values_list("owner__dn", "owner_group__name").distinct().order_by())
    expires = {
        (dn, group): at
        for dn, group, at in Credential.objects.values_list("dn", "group__name", "expires")
    }
    out = []
    for dn, group in [generic, *sorted(owners - {generic}, key=str)]:
        who = "generic pilots" if (dn, group) == generic else f"private pilots of {dn} as {group}"
        at = expires.get((dn, group))
        if at is None:
            out.append((f"No credential for {who}: the director sends none", DIRECTOR_URL))
            continue
        left = (at - now) / timedelta(days=1)
        if left < min_days:
            out.append(
                (
                    f"The credential for {who} has {max(left, 0):.1f} days left, under "
                    f"PilotProxyMinDays ({min_days:g}): the director sends none",
                    DIRECTOR_URL,
                )
            )
        elif left < 2 * min_days:
            out.append(
                (
                    f"The credential for {who} runs out in {left:.1f} days "
                    f"(the director needs {min_days:g} left)",
                    DIRECTOR_URL,
                )
            )
    return out


def director_alerts(user) -> list[tuple[str, str]]:
    runs = recent_director_runs()
    return [*blocked_taskqueues(user, runs), *full_pools(runs), *credential_alerts(user)]


def pilots_chart() -> str:
    pilots = pilot_summary()
    return charts.to_html(charts.pilots_per_site_figure(pilots)) if pilots else ""


def pilot_summary() -> list[dict]:
    """Per site and CE: pilots per status, and jobs per pilot. One aggregate query (not a row
    per pilot ever sent)."""
    rows: dict[tuple[str, str], dict] = defaultdict(lambda: Counter())
    jobs: dict[str, int] = defaultdict(int)
    done: dict[str, int] = defaultdict(int)
    for site, ce, status, n, jobs_done in (
        Pilot.objects.order_by()
        .values_list("site", "ce", "status")
        .annotate(n=Count("*"), done=Sum("jobs_done"))
    ):
        rows[(site, ce)][status] += n
        jobs[ce] += n
        done[ce] += jobs_done or 0
    return [
        {
            "site": site,
            "ce": ce,
            "counts": {s.value: counts.get(s.value, 0) for s in PilotStatus},
            "jobs_per_pilot": done[ce] / jobs[ce] if jobs.get(ce) else 0.0,
        }
        for (site, ce), counts in sorted(rows.items())
    ]
