"""The TaskQueue change log: what the matchers' per-process view of the TaskQueues follows.

Every change that a matcher's cache depends on is written here in the transaction that makes
it: a TaskQueue created or dropped, a priority changed, a group's JobSharing saved. The matcher
processes read the entries after their last position (matcher/taskqueue_view.py), so a change
made by any process on any host reaches them within the view's refresh bound, at the cost of
one indexed query a second, whatever the number of TaskQueues.

The log is trimmed by the priorities cycle: entries older than RETENTION go, and a
`trimmed` entry records how far, so that a process that has not read the log since then knows
it missed entries and reloads.

The log is machinery, not grid time: its entries are stamped and trimmed by the real wall
clock (`now()` below), never by core.clock, whose simulated grid time runs many times faster
under `make run` (at 60x, ten minutes of grid time would be ten real seconds, and any process
idle that long would reload every TaskQueue).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.db import connection
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.utils import timezone

from matcher.models import TaskQueueChange
from shares.models import GridGroup

Kind = TaskQueueChange.Kind
TABLE = TaskQueueChange._meta.db_table
# Long enough for any process that polls at all (every second while it matches) and for any
# transaction that commits late (see the view's HOLE_SECONDS); short enough to stay small.
RETENTION = timedelta(minutes=10)  # real time


def now():
    """The log's time: real wall-clock time, whatever the simulated grid's clock says."""
    return timezone.now()


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
    at = now()
    _insert([(Kind.CREATED, tq, None, None, None, at) for tq in sorted(set(tq_ids))])


def taskqueues_dropped(tq_ids: Iterable[int]) -> None:
    at = now()
    _insert([(Kind.DROPPED, tq, None, None, None, at) for tq in sorted(set(tq_ids))])


def priorities_changed(priorities: Iterable[tuple[int, float]]) -> None:
    at = now()
    _insert([(Kind.PRIORITY, tq, None, p, None, at) for tq, p in priorities])


def logged_priority_update_sql(update_sql: str, counted: bool = False) -> str:
    """PostgreSQL: an `UPDATE ... RETURNING t.id, t.priority` of TaskQueue priorities as one
    statement that also logs each row it changed (the last parameter is the time: `now()`).
    `counted`: the statement answers one row, (rows changed, the highest log number used)."""
    insert = (
        f"INSERT INTO {TABLE} (kind, task_queue_id, priority, at) "
        f"SELECT '{Kind.PRIORITY.value}', id, priority, %s FROM upd"
    )
    if counted:
        return (
            f"WITH upd AS ({update_sql}), logged AS ({insert} RETURNING seq) "
            "SELECT count(*), max(seq) FROM logged"
        )
    return f"WITH upd AS ({update_sql}) {insert}"


@receiver(post_save, sender=GridGroup)
def _group_saved(sender, instance, created, **kwargs):
    # Saved through the shares service or the admin: in the same transaction as the save. The
    # claim re-checks JobSharing itself; this only keeps the views' owner rule current.
    if not created:
        _insert([(Kind.GROUP, None, instance.pk, None, None, now())])


def trim(at=None) -> int:
    """Delete the entries older than RETENTION of real time (`at`, default now()); returns
    how many. Called by the priorities cycle, inside a transaction."""
    at = at or now()
    cutoff = at - RETENTION
    upto = (
        TaskQueueChange.objects.filter(at__lt=cutoff)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )
    if upto is None:
        return 0
    deleted, _ = TaskQueueChange.objects.filter(seq__lte=upto).delete()
    _insert([(Kind.TRIMMED, None, None, None, upto, at)])
    return deleted
