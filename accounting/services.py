"""The accounting cycle (every minute): the running jobs sampled into their hour's bins, the
jobs that ended counted (with the CPU and wall time their payloads reported), old bins
dropped. Bins grow by increments only (F()), under the cycle's lock.

The status history is read one cycle behind: rows up to the highest id seen at the previous
run, so that a transaction still open then (holding a lower id) has committed by now."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, F, Max, Sum
from django.db.models.functions import Coalesce, TruncHour

from accounting.models import AccountingBin, AccountingMark
from core import clock, gdpconfig
from core.cycles import cycle
from matcher.lifecycle import FAILED, FINISHED, RUNNING_STATES
from matcher.models import Job, JobStatusHistory

MAX_GAP_MINUTES = 5.0  # a longer pause (a stopped cluster) is not credited to its last sample
FIELDS = ("running_minutes", "finished", "failed", "cpu_seconds", "wall_seconds")


def _hour(at):
    return at.replace(minute=0, second=0, microsecond=0)


def _running(now, minutes: float, out: dict) -> int:
    rows = (
        Job.objects.filter(status__in=RUNNING_STATES)
        .order_by()
        .values_list("owner_group_id", "owner_id", "site", "grid_ce")
        .annotate(n=Count("*"))
    )
    total = 0
    for group, user, site, ce, n in rows:
        out[(_hour(now), group, user, site, ce)]["running_minutes"] += n * minutes
        total += n
    return total


def _ended(after: int, upto: int, out: dict) -> int:
    rows = (
        JobStatusHistory.objects.filter(
            id__gt=after, id__lte=upto, to_status__in=(FINISHED, FAILED)
        )
        .order_by()
        .annotate(hour=TruncHour("at"))
        .values_list(
            "hour", "job__owner_group_id", "job__owner_id", "job__site", "job__grid_ce", "to_status"
        )
        .annotate(
            n=Count("*"),
            cpu=Coalesce(Sum("job__cpu_seconds"), 0.0),
            wall=Coalesce(Sum("job__wall_seconds"), 0.0),
        )
    )
    total = 0
    for hour, group, user, site, ce, to, n, cpu, wall in rows:
        if group is None:  # a job purged meanwhile
            continue
        counts = out[(hour, group, user, site, ce)]
        counts[to] += n
        counts["cpu_seconds"] += cpu
        counts["wall_seconds"] += wall
        total += n
    return total


def _add(deltas: dict) -> None:
    AccountingBin.objects.bulk_create(
        [
            AccountingBin(hour=h, group_id=g, user_id=u, site=s or "", ce=c or "")
            for h, g, u, s, c in deltas
        ],
        ignore_conflicts=True,
    )
    for (h, g, u, s, c), counts in deltas.items():
        AccountingBin.objects.filter(
            hour=h, group_id=g, user_id=u, site=s or "", ce=c or ""
        ).update(**{f: F(f) + counts[f] for f in FIELDS if counts.get(f)})


@cycle("accounting")
def accounting_cycle() -> dict:
    now = clock.now()
    deltas: dict = defaultdict(lambda: defaultdict(float))
    with transaction.atomic():
        mark = AccountingMark.objects.select_for_update().first()
        if mark is None:
            mark = AccountingMark.objects.create(sampled_at=None, history_id=0)
        if mark.sampled_at is None:
            minutes = 1.0
        else:
            minutes = min(MAX_GAP_MINUTES, max(0.0, (now - mark.sampled_at).total_seconds() / 60))
        running = _running(now, minutes, deltas)
        seen = JobStatusHistory.objects.aggregate(top=Max("id"))["top"] or 0
        upto = min(seen, mark.seen_id) if mark.sampled_at is not None else 0
        ended = _ended(mark.history_id, upto, deltas) if upto > mark.history_id else 0
        _add({k: dict(v) for k, v in deltas.items()})
        mark.sampled_at, mark.history_id = now, max(mark.history_id, upto)
        mark.seen_id = seen
        mark.save()
        keep = now - timedelta(days=gdpconfig.get("AccountingDays"))
        dropped = AccountingBin.objects.filter(hour__lt=_hour(keep)).delete()[0]
    return {"running": running, "ended": ended, "bins": len(deltas), "dropped": dropped}
