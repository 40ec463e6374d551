"""TaskQueue priorities: the matcher feeds the pure engine (shares.priorities) plain data and
writes the result back; the usage sampler feeds the share correctors. Cycles: `priorities`
(every 2 minutes) and `usage_sampling` (every minute).

Also the marks of the groups whose priorities are due (PrioritiesDue): a transaction that
creates or drops a TaskQueue marks its group, and whoever recomputes the group takes the mark
(matcher/services/housekeeping.py within seconds, the priorities cycle every group)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from core import clock, db, gdpconfig
from core.cycles import cycle
from matcher import changelog
from matcher.lifecycle import FINAL_STATES, RUNNING_STATES
from matcher.models import Job, JobStateSample, PrioritiesDue, TaskQueue, TaskQueuePriorityCount
from shares import priorities as engine
from shares import services as share_services
from shares.models import GridGroup

_LOADS_SQL = f"""
SELECT tq.id, tq.owner_id, tq.owner_group_id,
       COALESCE(SUM(c.user_priority * c.jobs), 0), COALESCE(SUM(c.jobs), 0)
FROM {TaskQueue._meta.db_table} tq
LEFT JOIN {TaskQueuePriorityCount._meta.db_table} c ON c.task_queue_id = tq.id
{{where}}
GROUP BY tq.id, tq.owner_id, tq.owner_group_id
"""


def taskqueue_loads(group_ids=None) -> list[engine.TaskQueueLoad]:
    """Every TaskQueue's owner, group, sum of UserPriorities and jobs, from the per-priority
    counts (as many rows as TaskQueue x distinct priorities, not as waiting jobs)."""
    where, params = "", []
    if group_ids is not None:
        ids = sorted(set(group_ids))
        if not ids:
            return []
        where = f"WHERE tq.owner_group_id IN ({', '.join(['%s'] * len(ids))})"
        params = ids
    with connection.cursor() as cur:
        cur.execute(_LOADS_SQL.format(where=where), params)
        return [engine.TaskQueueLoad(*row) for row in cur.fetchall()]


def groups_map() -> dict[int, engine.Group]:
    return {
        g: engine.Group(g, share, sharing)
        for g, share, sharing in GridGroup.objects.values_list("id", "job_share", "job_sharing")
    }


def _write_priorities(priorities: dict[int, float]) -> None:
    """Store the priorities that changed, and log each change for the matchers' views."""
    if not priorities:
        return
    table = TaskQueue._meta.db_table
    items = sorted(priorities.items())  # one lock order for concurrent recomputes
    now = changelog.now()  # the change log's real time, not the simulated grid's
    with transaction.atomic(), connection.cursor() as cur:
        for start in range(0, len(items), 5000):
            chunk = items[start : start + 5000]
            # Rows locked in id order first: a cycle and a background recomputation of some
            # groups (services/housekeeping.py) then wait for each other, never deadlock.
            where, params = db.id_in("id", [tq for tq, _ in chunk])
            cur.execute(
                f"SELECT id FROM {table} WHERE {where} ORDER BY id FOR NO KEY UPDATE", params
            )
            rows = db.values_sql([None, "double precision"], len(chunk))
            update = (
                f"UPDATE {table} t SET priority = v.p FROM (VALUES {rows}) AS v(id, p) "
                "WHERE t.id = v.id AND t.priority IS DISTINCT FROM v.p "
                "RETURNING t.id, t.priority"
            )
            cur.execute(
                changelog.logged_priority_update_sql(update),
                [v for pair in chunk for v in pair] + [now],
            )


def recompute_priorities(group_ids=None, corrections=None) -> dict[int, float]:
    """Recompute (and store) the priorities of every TaskQueue, or of those of some groups.

    A group's TaskQueues depend only on that group (its JobShare, its users with waiting
    jobs, their UserPriorities) and on the stored correction factors.
    """
    loads = taskqueue_loads(group_ids)
    if corrections is None:
        corrections = share_services.latest_corrections()
    result = engine.taskqueue_priorities(
        loads, groups_map(), corrections, gdpconfig.get("PRIORITY_CONSOLIDATION")
    )
    # TaskQueues emptied by matching keep their rows until dropped: the floor, not a stale value.
    for tq in loads:
        result.setdefault(tq.id, engine.MIN_PRIORITY)
    _write_priorities(result)
    return result


def waiting_entities(loads) -> dict[int, set[int]]:
    waiting: dict[int, set[int]] = defaultdict(set)
    for tq in loads:
        if tq.jobs > 0:
            waiting[tq.group_id].add(tq.owner_id)
    return waiting


@cycle("priorities")
def priorities_cycle() -> dict:
    """Run the share correctors on the usage history, then recompute every priority."""
    take_marks(None)  # every group is recomputed here
    loads = taskqueue_loads()
    factors = share_services.run_correctors(waiting_entities(loads))
    # The factors of this run, even none: an empty run must not leave older factors applied.
    result = recompute_priorities(corrections=factors)
    with transaction.atomic():
        trimmed = changelog.trim()  # the matchers' change log, which this cycle feeds most
    return {
        "taskqueues": len(result),
        "corrected_entities": len(factors),
        "trimmed_changes": trimmed,
    }


@cycle("usage_sampling")
def usage_sampling_cycle() -> dict:
    """Record the running jobs per (user, group), thin the old samples."""
    rows = list(
        Job.objects.filter(status__in=RUNNING_STATES)
        .order_by()
        .values_list("owner_group_id", "owner_id")
        .annotate(n=Count("*"))
    )
    share_services.record_usage(rows)
    thinned = share_services.thin_usage()
    sample_job_states()
    return {"entities": len(rows), "running": sum(n for *_, n in rows), **thinned}


def sample_job_states() -> None:
    """Jobs per live state now, for the dashboard; samples older than UsageHistoryDays go."""
    now = clock.now()
    counts = dict(
        Job.objects.exclude(status__in=FINAL_STATES)
        .order_by()
        .values_list("status")
        .annotate(n=Count("*"))
    )
    JobStateSample.objects.create(at=now, counts=counts)
    keep = timedelta(days=gdpconfig.get("UsageHistoryDays"))
    JobStateSample.objects.filter(at__lt=now - keep).delete()


# --- the marks of groups whose priorities are due ------------------------------------------------


def mark_due(group_ids: Iterable[int], since: datetime) -> None:
    """Mark these groups due since `since`, in the caller's transaction."""
    with connection.cursor() as cur:
        # The oldest mark stays: a group that keeps changing is recomputed once per delay.
        cur.executemany(
            f"INSERT INTO {PrioritiesDue._meta.db_table} (group_id, since) VALUES (%s, %s) "
            "ON CONFLICT DO NOTHING",
            [(g, since) for g in group_ids],
        )


def take_marks(older_than: float | None) -> list[int]:
    """Delete the marks at least `older_than` seconds old (None: all); returns their groups.
    Its own short transaction: a submission marking its group never waits for a
    recomputation."""
    marks = PrioritiesDue.objects.all()
    if older_than is not None:
        marks = marks.filter(since__lte=timezone.now() - timedelta(seconds=older_than))
    with transaction.atomic(), connection.cursor() as cur:
        sql, params = marks.values("group_id").query.sql_with_params()
        cur.execute(
            f"DELETE FROM {PrioritiesDue._meta.db_table} WHERE group_id IN ({sql}) "
            "RETURNING group_id",
            params,
        )
        return sorted(r[0] for r in cur.fetchall())
