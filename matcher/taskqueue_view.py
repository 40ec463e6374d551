"""The matcher's per-process view of the TaskQueues, kept current by the change log.

It holds every TaskQueue's definition and priority, and per resource description (pilots of
one CE ask alike) the TaskQueues that resource may take, by CPU segment, ready to draw from.
It is loaded once (a "full reload", counted in `stats`), then follows the change log
(matcher/changelog.py) at most every `settings.TASKQUEUE_VIEW_REFRESH_SECONDS` (1 s):

- a TaskQueue created is tested once against each memoised resource and inserted where it fits;
- a TaskQueue dropped leaves the definitions and every memoised resource's segment;
- a priority change updates the draw weights, nothing is matched again;
- a group's JobSharing change updates its TaskQueues' owner rule and forgets the private
  resources of that group.

A change made by any process is seen within that refresh interval (plus the poll itself). Nothing
depends on the view being current for correctness: the claim re-checks the job, its
membership and the owner rule in the database (claims.py); a stale entry costs at most a
claim that finds nothing.

Log entries are numbered by a sequence, but transactions commit in their own order: an entry
may become visible after a higher-numbered one was read. The numbers skipped over are kept as
holes and asked for again for HOLE_SECONDS. A rare audit (AUDIT_SECONDS) compares the ids and
priorities with the database and repairs any difference without reloading definitions, should
a writer ever bypass the log or commit later than that.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.db import connection

from matcher import changelog, matching, races
from matcher.models import TaskQueue, TaskQueueChange

HOLE_SECONDS = 60.0
HOLE_LIMIT = 2000
RELOAD_HOLES = 200  # numbers below the top at a full reload that may belong to open transactions
AUDIT_SECONDS = 60.0
MEMO_LIMIT = 1024
LOG_BATCH = 10_000
Kind = TaskQueueChange.Kind


@dataclass
class Segment:
    """The TaskQueues of one CPU segment a resource may take; the race drawn from them is
    rebuilt when they or the priorities change."""

    cpu_time: int
    members: dict[int, None] = field(default_factory=dict)  # an ordered set of TaskQueue ids
    race: races.Field | None = None
    version: int = -1


@dataclass
class Memo:
    resource: matching.Resource
    segments: dict[int, Segment] = field(default_factory=dict)
    order: list[Segment] | None = None  # highest CPU segment first
    merged: races.Field | None = None  # every segment's TaskQueues in one race
    merged_version: int = -1

    def ordered(self) -> list[Segment]:
        if self.order is None:
            self.order = [self.segments[c] for c in sorted(self.segments, reverse=True)]
        return self.order

    def add(self, tq: matching.TQ) -> None:
        segment = self.segments.get(tq.cpu_time)
        if segment is None:
            segment = self.segments[tq.cpu_time] = Segment(tq.cpu_time)
            self.order = None
        segment.members[tq.id] = None
        segment.race = None
        self.merged = None

    def discard(self, tq: matching.TQ) -> None:
        segment = self.segments.get(tq.cpu_time)
        if segment is not None and segment.members.pop(tq.id, 0) is None:
            segment.race = None
            self.merged = None


class TaskQueueView:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.stats: Counter = Counter()
        self._reset()

    def _reset(self) -> None:
        self.loaded = False
        self.tqs: dict[int, matching.TQ] = {}
        self.priority: dict[int, float] = {}
        self.parked: set[int] = set()  # emptied by this process, drop pending: not drawn
        self.memo: OrderedDict[matching.Resource, Memo] = OrderedDict()
        self.max_seen = 0
        self.holes: dict[int, float] = {}
        self.checked = -float("inf")
        self.audited = time.monotonic()
        self.weights_version = 0

    def invalidate(self) -> None:
        with self.lock:
            self._reset()

    # --- reading the database -----------------------------------------------------------------

    def refresh(self, force: bool = False) -> None:
        """Follow the change log if the refresh interval has passed since the last time."""
        now = time.monotonic()
        interval = settings.TASKQUEUE_VIEW_REFRESH_SECONDS
        if self.loaded and not force and now - self.checked < interval:
            return
        with self.lock:
            if self.loaded and not force and now - self.checked < interval:
                return
            if not self.loaded:
                self._full_reload(now)
            elif not self._follow(now):
                self._full_reload(now)  # fell behind a trim of the log
            elif now - self.audited >= AUDIT_SECONDS:
                self.audit()
            self.checked = now

    def _full_reload(self, now: float) -> None:
        self._reset()
        with connection.cursor() as cur:
            cur.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {changelog.TABLE}")
            top = cur.fetchone()[0]
            # Entries below the top that are not there yet may still commit: holes to watch.
            cur.execute(f"SELECT seq FROM {changelog.TABLE} WHERE seq > %s", [top - RELOAD_HOLES])
            present = {r[0] for r in cur.fetchall()}
        self.holes = {
            s: now for s in range(max(1, top - RELOAD_HOLES + 1), top) if s not in present
        }
        self.max_seen = top
        for tq in load_definitions(None):
            self.tqs[tq.id] = tq
            self.priority[tq.id] = tq.priority
        self.loaded, self.checked, self.audited = True, now, now
        self.stats["taskqueue_full_reloads"] += 1

    def _follow(self, now: float) -> bool:
        """Apply the new entries; False when entries were trimmed before this process read
        them (it must reload)."""
        while True:
            rows = _log_after(self.max_seen, list(self.holes))
            if not rows:
                break
            if not self._apply(rows, now):
                return False
            if len(rows) < LOG_BATCH:
                break
        for seq, since in list(self.holes.items()):
            if now - since > HOLE_SECONDS:
                del self.holes[seq]  # rolled back, most likely; the audit covers the rest
        return True

    def _apply(self, rows, now: float) -> bool:
        created = {r[2] for r in rows if r[1] == Kind.CREATED and r[2] not in self.tqs}
        loaded = {tq.id: tq for tq in load_definitions(created)} if created else {}
        weights_changed, before = False, self.max_seen
        for seq, kind, tq_id, group_id, priority, upto in rows:
            self.holes.pop(seq, None)
            if seq > self.max_seen:
                skipped = range(max(self.max_seen + 1, seq - HOLE_LIMIT), seq)
                self.holes.update((s, now) for s in skipped)
                self.max_seen = seq
            if kind == Kind.CREATED:
                if tq_id in loaded and tq_id not in self.tqs:
                    self._insert(loaded[tq_id])
            elif kind == Kind.DROPPED:
                self._remove(tq_id)
            elif kind == Kind.PRIORITY:
                if tq_id in self.priority and self.priority[tq_id] != priority:
                    self.priority[tq_id] = priority
                    weights_changed = True
            elif kind == Kind.GROUP:
                self._group_changed(group_id)
            elif kind == Kind.TRIMMED:
                if before < upto:
                    return False  # entries this process had not read yet were deleted
                for hole in [h for h in self.holes if h <= upto]:
                    del self.holes[hole]
            self.stats["taskqueue_changes_applied"] += 1
        if len(self.holes) > HOLE_LIMIT:
            for hole in sorted(self.holes)[: len(self.holes) - HOLE_LIMIT]:
                del self.holes[hole]
        if weights_changed:
            self.weights_version += 1
        return True

    def audit(self) -> None:
        """Compare ids and priorities with the database; repair what differs (no reload)."""
        with self.lock:
            with connection.cursor() as cur:
                cur.execute(f"SELECT id, priority FROM {TaskQueue._meta.db_table}")
                actual = dict(cur.fetchall())
            missing = set(actual) - set(self.tqs)
            for tq in load_definitions(missing) if missing else []:
                self._insert(tq)
            gone = set(self.tqs) - set(actual)
            for tq_id in gone:
                self._remove(tq_id)
            moved = [t for t, p in actual.items() if t in self.priority and self.priority[t] != p]
            for tq_id in moved:
                self.priority[tq_id] = actual[tq_id]
            if moved:
                self.weights_version += 1
            self.audited = time.monotonic()
            self.stats["taskqueue_audits"] += 1
            self.stats["taskqueue_audit_repairs"] += len(missing) + len(gone) + len(moved)

    # --- changing the view --------------------------------------------------------------------

    def _insert(self, tq: matching.TQ) -> None:
        self.tqs[tq.id] = tq
        self.priority[tq.id] = tq.priority
        self.parked.discard(tq.id)
        for memo in self.memo.values():
            if matching.first_failing_rule(tq, memo.resource) is None:
                memo.add(tq)
        self.stats["taskqueue_memo_inserts"] += 1

    def _remove(self, tq_id: int) -> None:
        tq = self.tqs.pop(tq_id, None)
        self.priority.pop(tq_id, None)
        self.parked.discard(tq_id)
        if tq is not None:
            for memo in self.memo.values():
                memo.discard(tq)

    def _group_changed(self, group_id: int) -> None:
        from shares.models import GridGroup

        sharing = GridGroup.objects.filter(pk=group_id).values_list("job_sharing", flat=True)
        sharing = next(iter(sharing), None)
        for tq_id, tq in list(self.tqs.items()):
            if tq.owner_group_id == group_id and sharing is not None:
                self.tqs[tq_id] = replace(tq, job_sharing=sharing)
        for resource in [r for r in self.memo if r.private and r.owner_group_id == group_id]:
            del self.memo[resource]

    def park(self, tq_ids: Iterable[int]) -> None:
        """This process emptied these TaskQueues: draw them no more until they are dropped
        (or found busy again, `unpark`)."""
        with self.lock:
            for tq_id in tq_ids:
                tq = self.tqs.get(tq_id)
                if tq is not None and tq_id not in self.parked:
                    self.parked.add(tq_id)
                    for memo in self.memo.values():
                        memo.discard(tq)

    def dropped_or_kept(self, dropped: list[int], kept: list[int]) -> None:
        """The housekeeper's answer to a drop of parked TaskQueues."""
        with self.lock:
            for tq_id in dropped:
                self._remove(tq_id)
            for tq_id in kept:
                tq = self.tqs.get(tq_id)
                if tq is not None and tq_id in self.parked:
                    self._insert(tq)  # a submission filled it again meanwhile

    # --- what the matcher asks ----------------------------------------------------------------

    def races_for(self, resource: matching.Resource, by_segment: bool = True) -> list[races.Field]:
        """The races of the TaskQueues the resource may take, highest CPU segment first; with
        `by_segment` off (MatchCPUSegmentPrecedence), one race of them all."""
        self.refresh()
        with self.lock:
            memo = self.memo.get(resource)
            if memo is None:
                memo = self._memoise(resource)
            else:
                self.memo.move_to_end(resource)
            if not by_segment:
                if memo.merged is None or memo.merged_version != self.weights_version:
                    ids = [i for segment in memo.ordered() for i in segment.members]
                    memo.merged = races.Field.of(ids, [self.priority[i] for i in ids])
                    memo.merged_version = self.weights_version
                return [memo.merged] if memo.merged.ids else []
            out = []
            for segment in memo.ordered():
                if segment.race is None or segment.version != self.weights_version:
                    ids = list(segment.members)
                    segment.race = races.Field.of(ids, [self.priority[i] for i in ids])
                    segment.version = self.weights_version
                if segment.race.ids:
                    out.append(segment.race)
            return out

    def _memoise(self, resource: matching.Resource) -> Memo:
        memo = Memo(resource)
        for tq in self.tqs.values():
            if tq.id not in self.parked and matching.first_failing_rule(tq, resource) is None:
                memo.add(tq)
        if len(self.memo) >= MEMO_LIMIT:
            self.memo.popitem(last=False)  # the least recently asked
        self.memo[resource] = memo
        self.stats["taskqueue_memo_builds"] += 1
        return memo

    def definitions(self) -> list[matching.TQ]:
        """Every TaskQueue as the matcher sees it, by id, with its current priority."""
        self.refresh()
        with self.lock:
            return [self.definition(tq_id) for tq_id in sorted(self.tqs)]

    def definition(self, tq_id: int) -> matching.TQ | None:
        tq = self.tqs.get(tq_id)
        if tq is None:
            return None
        p = self.priority[tq_id]
        return tq if tq.priority == p else replace(tq, priority=p)


def _log_after(position: int, holes: list[int]) -> list[tuple]:
    sql = (
        f"SELECT seq, kind, task_queue_id, group_id, priority, upto FROM {changelog.TABLE} "
        "WHERE seq > %s"
    )
    params: list = [position]
    if holes:
        sql += f" OR seq IN ({', '.join(['%s'] * len(holes))})"
        params += holes
    sql += f" ORDER BY seq LIMIT {LOG_BATCH}"
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def load_definitions(ids: Iterable[int] | None) -> list[matching.TQ]:
    """TaskQueue definitions, every one (None) or those of these ids that exist."""
    rows = TaskQueue.objects.select_related("owner", "owner_group").order_by("id")
    if ids is not None:
        rows = rows.filter(pk__in=sorted(ids))
    return [
        matching.TQ(
            id=tq.pk,
            owner_id=tq.owner_id,
            owner_group_id=tq.owner_group_id,
            job_sharing=tq.owner_group.job_sharing,
            setup=tq.setup,
            cpu_time=tq.cpu_time,
            priority=tq.priority,
            sites=frozenset(tq.sites),
            banned_sites=frozenset(tq.banned_sites),
            grid_ces=frozenset(tq.grid_ces),
            platforms=frozenset(tq.platforms),
            pilot_types=frozenset(tq.pilot_types),
            tags=frozenset(tq.tags),
            owner_name=tq.owner.get_username(),
            group_name=tq.owner_group.name,
        )
        for tq in rows
    ]


view = TaskQueueView()
