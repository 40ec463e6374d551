"""The TaskQueue change log: what the matchers' per-process view of the TaskQueues follows.

Every change that a matcher's cache depends on is written here in the transaction that makes
it: a TaskQueue created or dropped, a priority changed, a group's JobSharing saved. The matcher
processes read the entries after their last position (matcher/taskqueue_view.py), so a change
made by any process on any host reaches them within the view's refresh bound, at the cost of
one indexed query a second, whatever the number of TaskQueues.

The log is trimmed by the priorities cycle: entries older than RETENTION go, and a
`trimmed` entry records how far, so that a process that has not read the log since then knows
it missed entries and reloads.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.db import connection
from django.db.models.signals import post_save
from django.dispatch import receiver

from config import clock
from matcher.models import TaskQueueChange
from shares.models import GridGroup

Kind = TaskQueueChange.Kind
TABLE = TaskQueueChange._meta.db_table
# Long enough for any process that polls at all (every second while it matches) and for any
# transaction that commits late (see the view's HOLE_SECONDS); short enough to stay small.
RETENTION = timedelta(minutes=10)


def _insert(rows: list[tuple]) -> None:
    if not rows:
        return
    with connection.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {TABLE} (kind, task_queue_id, group_id, priority, upto, at) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            rows,
        )


def taskqueues_created(tq_ids: Iterable[int]) -> None:
    """Call inside the transaction that created them (a TaskQueue another transaction created
    meanwhile may be named too: readers load it if they do not know it yet)."""
    now = clock.now()
    _insert([(Kind.CREATED, tq, None, None, None, now) for tq in sorted(set(tq_ids))])


def taskqueues_dropped(tq_ids: Iterable[int]) -> None:
    now = clock.now()
    _insert([(Kind.DROPPED, tq, None, None, None, now) for tq in sorted(set(tq_ids))])


def priorities_changed(priorities: Iterable[tuple[int, float]]) -> None:
    now = clock.now()
    _insert([(Kind.PRIORITY, tq, None, p, None, now) for tq, p in priorities])


def logged_priority_update_sql(update_sql: str) -> str:
    """PostgreSQL: an `UPDATE ... RETURNING t.id, t.priority` of TaskQueue priorities as one
    statement that also logs each row it changed (the last parameter is the time)."""
    return (
        f"WITH upd AS ({update_sql}) INSERT INTO {TABLE} (kind, task_queue_id, priority, at) "
        f"SELECT '{Kind.PRIORITY.value}', id, priority, %s FROM upd"
    )


@receiver(post_save, sender=GridGroup)
def _group_saved(sender, instance, created, **kwargs):
    # Saved through the shares service or the admin: in the same transaction as the save. The
    # claim re-checks JobSharing itself; this only keeps the views' owner rule current.
    if not created:
        _insert([(Kind.GROUP, None, instance.pk, None, None, clock.now())])


def trim(now=None) -> int:
    """Delete the entries older than RETENTION; returns how many. Called by the priorities
    cycle, inside a transaction."""
    now = now or clock.now()
    cutoff = now - RETENTION
    upto = (
        TaskQueueChange.objects.filter(at__lt=cutoff)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )
    if upto is None:
        return 0
    deleted, _ = TaskQueueChange.objects.filter(seq__lte=upto).delete()
    _insert([(Kind.TRIMMED, None, None, None, upto, now)])
    return deleted
