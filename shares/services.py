"""Groups' JobShares with a change history, the running-jobs usage history, and the share
correctors run against it.

A group's edit here changes the group and its history only: the TaskQueue priorities that follow
are the matcher's, so pages, the API and tools edit a group through matcher.services
(update_group, revert_change), which call these."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Sum

from core import clock, gdpconfig
from shares import corrections
from shares.models import CorrectionRecord, GridGroup, GroupChange, UsageSample, UsageTick

EDITABLE = {
    "job_share": float,
    "job_sharing": bool,
    "generic_pilot": bool,
    "production_management": bool,
    "description": str,
}
# The fields the priority engine reads (shares.priorities.Group): a change of one of them changes
# the priorities of the group's TaskQueues.
PRIORITY_FIELDS = frozenset({"job_share", "job_sharing"})


class ShareError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def change_group(
    group: GridGroup, changes: dict, user=None, comment: str = ""
) -> tuple[GridGroup, list[str]]:
    """Apply {field: value}, recording each real change (who, when, old -> new); returns the
    group as saved and the fields that really changed."""
    for name, value in changes.items():
        if name not in EDITABLE:
            raise ShareError(name, "cannot be changed here")
        if name == "job_share":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ShareError(name, f"must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ShareError(name, f"must be a finite number, got {value}")
            if value < 0:
                raise ShareError(name, f"must not be negative, got {value}")
        elif not isinstance(value, EDITABLE[name]):
            raise ShareError(name, f"must be {EDITABLE[name].__name__}")
    now = clock.now()
    with transaction.atomic():
        locked = GridGroup.objects.select_for_update().get(pk=group.pk)
        changed = []
        for name, value in changes.items():
            old = getattr(locked, name)
            if name == "job_share":
                value = float(value)
            if old == value:
                continue
            GroupChange.objects.create(
                group=locked,
                field=name,
                old=old,
                new=value,
                changed_by=user if getattr(user, "pk", None) else None,
                at=now,
                comment=comment[:255],
            )
            setattr(locked, name, value)
            changed.append(name)
        if changed:
            locked.save(update_fields=changed)
    return locked, changed


def undo_change(change: GroupChange, user=None) -> tuple[GridGroup, list[str]]:
    """Put the field back to its value before `change`, as a new recorded change; returns what
    change_group returns."""
    return change_group(
        change.group, {change.field: change.old}, user, comment=f"revert of change {change.pk}"
    )


# --- usage history -----------------------------------------------------------------------------


def record_usage(rows: Iterable[tuple[int, int, int]], at: datetime | None = None) -> UsageTick:
    """Store one sample: rows of (group id, user id, running jobs) per (user, group); the
    per-group totals are stored beside them (user None)."""
    at = at or clock.now()
    per_group: dict[int, int] = defaultdict(int)
    samples = []
    with transaction.atomic():
        tick = UsageTick.objects.create(at=at, minutes=1.0)
        for group_id, user_id, running in rows:
            if running <= 0:
                continue
            per_group[group_id] += running
            samples.append(
                UsageSample(tick=tick, group_id=group_id, user_id=user_id, running=running)
            )
        samples += [
            UsageSample(tick=tick, group_id=g, user=None, running=n) for g, n in per_group.items()
        ]
        UsageSample.objects.bulk_create(samples)
    return tick


def thin_usage(now: datetime | None = None) -> dict:
    """Samples older than UsageFineHours become one per hour (time-weighted averages); those
    older than UsageHistoryDays go. A week of history stays ~ 24*60 + 7*24 ticks."""
    now = now or clock.now()
    fine_until = now - timedelta(hours=gdpconfig.get("UsageFineHours"))
    deleted = UsageTick.objects.filter(
        at__lt=now - timedelta(days=gdpconfig.get("UsageHistoryDays"))
    ).delete()[0]
    merged = 0
    old = list(UsageTick.objects.filter(at__lt=fine_until, minutes__lt=60).order_by("at"))
    by_hour: dict[datetime, list[UsageTick]] = defaultdict(list)
    for tick in old:
        by_hour[tick.at.replace(minute=0, second=0, microsecond=0)].append(tick)
    for hour, ticks in by_hour.items():
        if len(ticks) < 2 and ticks[0].minutes >= 1 and hour + timedelta(hours=1) > fine_until:
            continue  # the hour is not over on the fine side yet
        minutes = sum(t.minutes for t in ticks)
        weighted: dict[tuple[int, int | None], float] = defaultdict(float)
        for s in UsageSample.objects.filter(tick__in=ticks).select_related("tick"):
            weighted[(s.group_id, s.user_id)] += s.running * s.tick.minutes
        with transaction.atomic():
            tick = UsageTick.objects.create(at=hour, minutes=minutes)
            UsageSample.objects.bulk_create(
                UsageSample(tick=tick, group_id=g, user_id=u, running=w / minutes)
                for (g, u), w in weighted.items()
            )
            UsageTick.objects.filter(pk__in=[t.pk for t in ticks]).delete()
        merged += len(ticks)
    return {"deleted_ticks": deleted, "merged_ticks": merged}


def average_usage(span_seconds: int, now: datetime | None = None) -> dict:
    """{(group, user or None): average running jobs over the last `span_seconds`}, absent
    entities counting 0, weighted by the minutes each tick stands for."""
    now = now or clock.now()
    ticks = UsageTick.objects.filter(at__gt=now - timedelta(seconds=span_seconds), at__lte=now)
    total_minutes = ticks.aggregate(m=Sum("minutes"))["m"] or 0.0
    if total_minutes <= 0:
        return {}
    out: dict[tuple[int, int | None], float] = defaultdict(float)
    for g, u, running, minutes in UsageSample.objects.filter(tick__in=ticks).values_list(
        "group_id", "user_id", "running", "tick__minutes"
    ):
        out[(g, u)] += running * minutes / total_minutes
    return dict(out)


def correction_active() -> bool:
    return gdpconfig.get("EnableSharesCorrection") and "WMSHistory" in gdpconfig.get(
        "ShareCorrectorsToStart"
    )


def run_correctors(waiting: dict[int, set[int]], now: datetime | None = None) -> dict:
    """Compute and store the corrections for the entities with waiting jobs.

    `waiting` maps each group with waiting jobs to the users with waiting jobs in it. Returns
    {(group, None) or (group, user): factor}; {} when correction is off.
    """
    now = now or clock.now()
    if not correction_active():
        return {}
    instances = corrections.parse_instances(gdpconfig.get("WMSHistory"))
    groups = {g.pk: g for g in GridGroup.objects.filter(pk__in=waiting)}
    by_name = {g.name: g for g in groups.values()}
    usage_cache: dict[int, dict] = {}
    factors: dict[tuple[int, int | None], float] = {}
    records = []
    for inst in instances:
        if inst.group is None:
            shares = {(g.pk, None): g.job_share for g in groups.values()}
        else:
            group = by_name.get(inst.group)
            if group is None or group.job_sharing:
                continue  # no waiting jobs in it now (or it became JobSharing)
            shares = {(group.pk, u): 1.0 for u in waiting[group.pk]}
        if not shares:
            continue
        usage = []
        for sl in inst.slices:
            if sl.time_span not in usage_cache:
                usage_cache[sl.time_span] = average_usage(sl.time_span, now)
            usage.append(usage_cache[sl.time_span])
        final, per_slice = corrections.corrections(inst, shares, usage)
        for entity, factor in final.items():
            factors[entity] = factor
            records.append(
                CorrectionRecord(
                    at=now,
                    instance=inst.name,
                    group_id=entity[0],
                    user_id=entity[1],
                    slices={
                        sl.name: corr[entity]
                        for sl, corr in zip(inst.slices, per_slice, strict=True)
                    },
                    factor=factor,
                )
            )
    CorrectionRecord.objects.bulk_create(records)
    CorrectionRecord.objects.filter(
        at__lt=now - timedelta(days=gdpconfig.get("UsageHistoryDays"))
    ).delete()
    return factors


def latest_corrections() -> dict[tuple[int, int | None], float]:
    """The factors of the last corrector run, {} when correction is off."""
    if not correction_active():
        return {}
    last = CorrectionRecord.objects.order_by("-at").values_list("at", flat=True).first()
    if last is None:
        return {}
    return {
        (g, u): f
        for g, u, f in CorrectionRecord.objects.filter(at=last).values_list(
            "group_id", "user_id", "factor"
        )
    }
