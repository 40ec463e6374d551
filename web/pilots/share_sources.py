"""What the pilots app gives the Shares page (web.shares.overview's pilot source): per group and
user, the pilots sent for its TaskQueues since a moment, those that claimed a job and those that
ended without one. One aggregate query: each pilot's entity is its TaskQueue's owner and group,
or, for a TaskQueue since removed, those of the jobs that were in it."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Exists, OuterRef, Subquery
from django.db.models.functions import Coalesce

from matcher.models import Job, TaskQueue
from pilots.models import Pilot, PilotStatus
from web.shares.overview import PilotCounts, register_pilot_source


def _of_taskqueue(field: str):
    """The TaskQueue's `field` (owner_id, owner_group_id), from its row or from its jobs."""
    live = TaskQueue.objects.filter(pk=OuterRef("task_queue_id")).values(field)[:1]
    past = Job.objects.filter(task_queue_id=OuterRef("task_queue_id")).values(field)[:1]
    return Coalesce(Subquery(live), Subquery(past))


def pilot_counts(since: datetime) -> PilotCounts:
    rows = (
        Pilot.objects.filter(submitted__gte=since)
        .annotate(
            g=_of_taskqueue("owner_group_id"),
            u=_of_taskqueue("owner_id"),
            found=Exists(Job.objects.filter(pilot_id=OuterRef("pk"))),
        )
        .order_by()
        .values("g", "u", "found", "status")
        .annotate(n=Count("id"))
    )
    out = PilotCounts()
    for r in rows:
        if r["g"] is None:
            continue  # a TaskQueue nothing refers to any more
        for key in ((r["g"], None), (r["g"], r["u"])):
            out.sent[key] = out.sent.get(key, 0) + r["n"]
            if r["found"]:
                out.found_work[key] = out.found_work.get(key, 0) + r["n"]
            elif r["status"] == PilotStatus.DONE:
                out.no_work[key] = out.no_work.get(key, 0) + r["n"]
    return out


register_pilot_source("pilots", pilot_counts)
