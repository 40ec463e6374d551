"""TaskQueue priorities: the matcher feeds the pure engine (shares.priorities) plain data and
writes the result back; the usage sampler feeds the share correctors. Cycles: `priorities`
(every 2 minutes) and `usage_sampling` (every minute).

Also the marks of the groups whose priorities are due (PrioritiesDue): a transaction that
creates or drops a TaskQueue marks its group, and whoever recomputes the group takes the mark
(matcher/services/housekeeping.py within seconds, the priorities cycle every group)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

import psycopg
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from core import clock, gdpconfig
from core.cycles import cycle
from matcher import changelog
from matcher.lifecycle import FINAL_STATES, RUNNING_STATES
from matcher.models import Job, JobStateSample, PrioritiesDue, TaskQueue, TaskQueuePriorityCount
from shares import priorities as engine
from shares import services as share_services
from shares.models import GridGroup

# The counts are summed before the join: one aggregate over the counts, one hash join.
_LOADS_SQL = f"""
SELECT tq.id, tq.owner_id, tq.owner_group_id, COALESCE(c.s, 0), COALESCE(c.n, 0)
FROM {TaskQueue._meta.db_table} tq
LEFT JOIN (
    SELECT task_queue_id, SUM(user_priority * jobs)::bigint AS s, SUM(jobs)::bigint AS n
    FROM {TaskQueuePriorityCount._meta.db_table} {{counts_where}} GROUP BY task_queue_id
) c ON c.task_queue_id = tq.id
{{where}}
"""


def taskqueue_loads(group_ids=None) -> list[engine.TaskQueueLoad]:
    """Every TaskQueue's owner, group, sum of UserPriorities and jobs, from the per-priority
    counts (as many rows as TaskQueue x distinct priorities, not as waiting jobs)."""
    where, counts_where, params = "", "", []
    if group_ids is not None:
        ids = sorted(set(group_ids))
        if not ids:
            return []
        where = "WHERE tq.owner_group_id = ANY(%s)"
        counts_where = (
            f"WHERE task_queue_id IN (SELECT id FROM {TaskQueue._meta.db_table} "
            "WHERE owner_group_id = ANY(%s))"
        )
        params = [ids, ids]
    connection.ensure_connection()
    # A binary cursor of psycopg's own: 50,000 rows of integers arrive without text parsing,
    # each row made a TaskQueueLoad (a tuple) at C speed.
    with psycopg.Cursor(connection.connection) as cur:
        cur.execute(_LOADS_SQL.format(where=where, counts_where=counts_where), params, binary=True)
        return list(map(engine.TaskQueueLoad._make, cur.fetchall()))


def groups_map() -> dict[int, engine.Group]:
    return {
        g: engine.Group(g, share, sharing)
        for g, share, sharing in GridGroup.objects.values_list("id", "job_share", "job_sharing")
    }


def _write_priorities(priorities: dict[int, float]) -> tuple[int, int | None, datetime]:
    """Store the priorities that differ from the stored ones, and log each change for the
    matchers' views, in one transaction; returns (rows changed, the highest change-log number
    of this write or None, the time its log entries bear)."""
    now = changelog.now()  # the change log's real time, not the simulated grid's
    if not priorities:
        return 0, None, now
    table = TaskQueue._meta.db_table
    ids = sorted(priorities)  # one lock order for concurrent recomputes
    # Each list goes as one array literal, built at C speed (a float's repr reads back exactly
    # as the same double): as cheap to send and plan for 50,000 TaskQueues as for 5.
    id_array = "{" + ",".join(map(str, ids)) + "}"
    value_array = "{" + ",".join(map(repr, (priorities[t] for t in ids))) + "}"
    connection.ensure_connection()
    # psycopg's own cursor: the arrays are bound as parameters, not quoted into the text.
    with transaction.atomic(), psycopg.Cursor(connection.connection) as cur:
        # Rows locked in id order first: a cycle and a background recomputation of some groups
        # (services/housekeeping.py) then wait for each other, never deadlock.
        cur.execute(
            f"SELECT id FROM {table} WHERE id = ANY(%s::bigint[]) ORDER BY id FOR NO KEY UPDATE",
            [id_array],
        )
        update = (
            f"UPDATE {table} t SET priority = v.p "
            "FROM unnest(%s::bigint[], %s::double precision[]) AS v(id, p) "
            "WHERE t.id = v.id AND t.priority IS DISTINCT FROM v.p "
            "RETURNING t.id, t.priority"
        )
        cur.execute(
            changelog.logged_priority_update_sql(update, counted=True),
            [id_array, value_array, now],
        )
        written, seq = cur.fetchone()
        return written, seq, now


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


class PrioritiesState:
    """What the priorities cycle keeps between its runs in one process: the engine's inputs and
    results (shares.priorities.IncrementalPriorities) and the priorities as stored, so that a
    run recomputes only the entities whose inputs changed and writes only the priorities that
    differ from the stored ones.

    Other processes store priorities too (a background recomputation of due groups, a group's
    edit): each such write is in the change log, which a run reads first (the entries since
    its last read, HOLE_SECONDS before it for transactions that committed late), so that what
    it believes stored is what is stored. A process that has not read the log for longer than
    the log keeps its entries starts afresh: everything recomputed, only differences written.
    """

    HOLE_SECONDS = 60.0  # as the matchers' views (taskqueue_view): a late commit's margin

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.engine = engine.IncrementalPriorities()
        self.stored: dict[int, float] = {}
        self.written_seq: dict[int, int] = {}  # TaskQueue -> log number of this process's write
        self.read_at: datetime | None = None  # real time of the last read of the log
        self.write_times: list[datetime] = []  # the log times of this process's writes

    def _follow_log(self) -> set[int]:
        """Apply the priorities other processes stored since the last read; returns the
        TaskQueues whose stored priority is learnt so."""
        now = changelog.now()
        if self.read_at is None or now - self.read_at > changelog.RETENTION - timedelta(
            seconds=2 * self.HOLE_SECONDS
        ):
            self.reset()
            self.read_at = now
            return set()
        since, self.read_at = self.read_at - timedelta(seconds=self.HOLE_SECONDS), now
        learnt = set()
        # This process's own writes are stamped with times it keeps: not read back.
        self.write_times = [t for t in self.write_times if t >= since]
        with connection.cursor() as cur:
            cur.execute(
                f"SELECT seq, task_queue_id, priority FROM {changelog.TABLE} "
                "WHERE kind = %s AND at >= %s AND NOT (at = ANY(%s)) ORDER BY seq",
                [changelog.Kind.PRIORITY.value, since, self.write_times],
            )
            for seq, tq, priority in cur.fetchall():
                # This process's own entries, and those its later write superseded, are known.
                if seq > self.written_seq.get(tq, 0):
                    self.stored[tq] = priority
                    learnt.add(tq)
        return learnt

    def run(self, loads, correct) -> dict:
        """Recompute from these loads and the factors `correct(waiting)` gives, store what
        differs; returns the figures."""
        t0 = time.perf_counter()
        learnt = self._follow_log()
        self.engine.set_loads(loads)
        # The factors of this run, even none: an empty run must not leave older factors applied.
        corrections = correct(self.engine.waiting())
        changed = self.engine.recompute(
            groups_map(), corrections, gdpconfig.get("PRIORITY_CONSOLIDATION")
        )
        computed = self.engine.priorities
        if len(self.stored) > len(computed):  # TaskQueues dropped meanwhile
            self.stored = {t: p for t, p in self.stored.items() if t in computed}
            self.written_seq = {t: s for t, s in self.written_seq.items() if t in computed}
        due = {
            t: computed[t]
            for t in changed.keys() | learnt
            if t in computed and self.stored.get(t) != computed[t]
        }
        t1 = time.perf_counter()
        written, seq, at = _write_priorities(due)
        t2 = time.perf_counter()
        self.stored.update(due)
        if seq is not None:
            self.written_seq.update(dict.fromkeys(due, seq))
            self.write_times.append(at)
        return {
            "taskqueues": len(computed),
            "recomputed": self.engine.recomputed,
            "written": written,
            "corrected_entities": len(corrections),
            "compute_seconds": round(t1 - t0, 3),  # the log, the correctors, the engine
            "write_seconds": round(t2 - t1, 3),
        }


_state = PrioritiesState()


@cycle("priorities")
def priorities_cycle() -> dict:
    """Run the share correctors on the usage history, then recompute the priorities whose
    inputs changed since the last run (all of them on a process's first run)."""
    take_marks(None)  # every group is brought up to date here
    t0 = time.perf_counter()
    loads = taskqueue_loads()
    read = time.perf_counter() - t0
    figures = _state.run(loads, share_services.run_correctors)
    with transaction.atomic():
        trimmed = changelog.trim()  # the matchers' change log, which this cycle feeds most
    return {**figures, "trimmed_changes": trimmed, "read_seconds": round(read, 3)}


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
