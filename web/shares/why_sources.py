"""The facts beside the work and the slots that say why an entity is off its share, read for
web.shares.overview from the apps that hold them (shares.causes words them):

- director(since): per group and user, the director's decisions of its TaskQueues that drew
  pilots, the pilots drawn and taken, and what stopped them (pilots.DirectorDecision);
- held(): per group and user, its jobs held in brokerage, by state (not yet in a TaskQueue);
- share_changes(instances): per group, its last JobShare change within the longest slice of the
  corrector that corrects between the groups (shares.GroupChange);
- ran_by(since): per group and user, the pilots sent since then that ran its jobs, and of
  those the ones sent for another entity's TaskQueues;
- of_taskqueue(name): a TaskQueue's owner or group, from its row or, once it is gone, its jobs.

Read-only; a fixed number of queries whatever the number of decisions or jobs.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

from django.db.models import Count, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce

from core import clock
from matcher.models import Job, TaskQueue
from matcher.servability import Key
from pilots import director as pilot_director
from pilots.models import DirectorDecision
from shares.causes import BROKERAGE_STATES, DirectorFacts, ShareChange
from shares.corrections import Instance
from shares.models import GroupChange

EXTERNAL = "its pilots are started outside this director"  # services.plan_batch's note
SLOTS_FULL = "CEs took "  # services.collect_submitted's note


def of_taskqueue(name: str, ref: str = "task_queue_id"):
    """The TaskQueue's `name` (owner_id, owner_group_id), from its row or from its jobs; `ref`
    names the outer query's TaskQueue id."""
    live = TaskQueue.objects.filter(pk=OuterRef(ref)).values(name)[:1]
    past = Job.objects.filter(task_queue_id=OuterRef(ref)).values(name)[:1]
    return Coalesce(Subquery(live), Subquery(past))


def ran_by(since) -> dict[Key, tuple[int, int]]:
    """Per (group, None) and (group, user): (the pilots sent since then that ran its jobs, those
    of them sent for another entity's TaskQueues). One aggregate query."""
    rows = (
        Job.objects.filter(pilot__submitted__gte=since)
        .annotate(
            pg=of_taskqueue("owner_group_id", "pilot__task_queue_id"),
            pu=of_taskqueue("owner_id", "pilot__task_queue_id"),
        )
        .order_by()
        .values("owner_group_id", "owner_id", "pg", "pu")
        .annotate(n=Count("pilot_id", distinct=True))
    )
    out: dict[Key, tuple[int, int]] = {}
    for r in rows:
        g, u = r["owner_group_id"], r["owner_id"]
        for key, other in (
            ((g, None), r["pg"] != g),
            ((g, u), (r["pg"], r["pu"]) != (g, u)),
        ):
            ran, others = out.get(key, (0, 0))
            out[key] = (ran + r["n"], others + (r["n"] if other else 0))
    return out


def _stopping(note: str) -> str | None:
    """The note of a decision's text that kept every pilot it drew from leaving, or None."""
    found = pilot_director.blocker(note)
    if found:
        return found
    for part in note.split("; "):
        if part.endswith(EXTERNAL):
            return part
    return None


def director(since) -> dict[Key, DirectorFacts]:
    """Per (group, None) and (group, user): the director's decisions since then that drew pilots
    for its TaskQueues, what became of those pilots, and the λ of all its decisions."""
    rows = (
        DirectorDecision.objects.filter(at__gte=since)
        .order_by()
        .values("task_queue_id", "skipped")
        .annotate(
            n=Count("id", filter=Q(drawn__gt=0)),
            drawn_n=Sum("drawn"),
            sent=Sum("submitted"),
            lam_sum=Sum("lam"),
        )
    )
    rows = list(rows)
    ids = {r["task_queue_id"] for r in rows}
    owners = {
        t["id"]: (t["owner_group_id"], t["owner_id"])
        for t in TaskQueue.objects.filter(pk__in=ids).values("id", "owner_group_id", "owner_id")
    }
    missing = ids - set(owners)
    if missing:
        for j in (
            Job.objects.filter(task_queue_id__in=missing)
            .order_by()
            .values("task_queue_id", "owner_group_id", "owner_id")
            .distinct()
        ):
            owners.setdefault(j["task_queue_id"], (j["owner_group_id"], j["owner_id"]))
    tally: dict[Key, dict] = {}
    for r in rows:
        owner = owners.get(r["task_queue_id"])
        if owner is None:
            continue
        group, user = owner
        stop = _stopping(r["skipped"] or "")
        for key in ((group, None), (group, user)):
            t = tally.setdefault(
                key,
                {"decisions": 0, "drawn": 0, "sent": 0, "full": 0, "lam": 0.0, "stops": Counter()},
            )
            t["lam"] += r["lam_sum"] or 0.0
            t["decisions"] += r["n"]
            t["drawn"] += r["drawn_n"] or 0
            t["sent"] += r["sent"] or 0
            if not r["n"]:
                continue
            if stop:
                t["stops"][re.sub(r"\d+ days", "N days", stop)] += r["n"]
            elif SLOTS_FULL in (r["skipped"] or ""):
                t["full"] += r["n"]
    out = {}
    for key, t in tally.items():
        top = t["stops"].most_common(1)
        out[key] = DirectorFacts(
            decisions=t["decisions"],
            drawn=t["drawn"],
            submitted=t["sent"],
            blocker=top[0][0] if top else "",
            blocked=sum(t["stops"].values()),
            slots_full=t["full"],
            lam=t["lam"],
        )
    return out


def held() -> dict[Key, dict[str, int]]:
    """Per (group, None) and (group, user): its jobs in brokerage's states, by state."""
    out: dict[Key, dict[str, int]] = {}
    rows = (
        Job.objects.filter(status__in=BROKERAGE_STATES)
        .order_by()
        .values("owner_group_id", "owner_id", "status")
        .annotate(n=Count("id"))
    )
    for r in rows:
        for key in ((r["owner_group_id"], None), (r["owner_group_id"], r["owner_id"])):
            states = out.setdefault(key, {})
            states[r["status"]] = states.get(r["status"], 0) + r["n"]
    return out


def share_changes(instances: list[Instance], window_s: int) -> dict[int, ShareChange]:
    """Per group, its last JobShare change within the longest slice of the instance that
    corrects between the groups (or within `window_s`, the achieved share's, without one)."""
    slices = [s for i in instances if i.group is None for s in i.slices]
    longest = max(slices, key=lambda s: s.time_span, default=None)
    span = max(longest.time_span if longest else 0, window_s)
    name = longest.name if longest and longest.time_span >= window_s else "the achieved share"
    now = clock.now()
    out: dict[int, ShareChange] = {}
    rows = GroupChange.objects.filter(field="job_share", at__gte=now - timedelta(seconds=span))
    for c in rows.order_by("at", "id"):  # the last one per group wins
        try:
            old, new = float(c.old), float(c.new)
        except (TypeError, ValueError):
            continue
        out[c.group_id] = ShareChange(
            old=old,
            new=new,
            minutes_ago=(now - c.at).total_seconds() / 60,
            slice_name=name,
            slice_hours=span / 3600,
        )
    return out
