"""Work that follows a match or a TaskQueue change but that nobody should wait for.

- Dropping the TaskQueues a match or a move emptied (`drop_empty_taskqueues`; after a match, in
  the background, the matcher having already taken them out of its own draw: see
  taskqueue_view.park).
- Recomputing the priorities of the groups whose TaskQueues appeared or vanished. The
  transaction that creates or drops a TaskQueue marks its group due (PrioritiesDue); a mark
  RECOMPUTE_DELAY old is taken by one process, which recomputes the group exactly as an inline
  recomputation would (recompute_priorities of those groups), only later: the result reads the
  state of the group when it runs. A grid empties and fills TaskQueues many times a second:
  so each group is recomputed at most once per delay, by the one process that takes its mark
  (the priorities cycle recomputes every group and clears every mark). The marks themselves
  are matcher/taskqueue_priorities.py's.

One daemon thread per process does both, on its own database connection, after the commit of
what asked for it. Should the process die first, nothing is lost that the cycles do not
repair: `taskqueue_cleanup` drops empty TaskQueues and `priorities` takes the marks left.

With `settings.HOUSEKEEPING_IN_BACKGROUND` off, the work runs at once, in the caller's thread
(a single-process tool that wants repeatable results, and most of the test suite).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from matcher import changelog, taskqueue_priorities
from matcher.models import TaskQueue, TaskQueueJob, TaskQueuePriorityCount

log = logging.getLogger(__name__)

RECOMPUTE_DELAY = 5.0  # seconds a group's mark waits; real time, not the simulated clock
RETRY_SECONDS = 1.0


def in_background() -> bool:
    return settings.HOUSEKEEPING_IN_BACKGROUND


class Housekeeper:
    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._drops: list[tuple[list[int], Callable | None]] = []
        self._groups: set[int] = set()
        self._busy = False
        self._thread: threading.Thread | None = None
        self._pid: int | None = None
        self._due_at = 0.0
        self._stopping = False
        self._stop_at_exit = False
        self.counts = {"drops": 0, "recomputes": 0, "failures": 0}

    # --- asking ---------------------------------------------------------------------------

    def drop_later(self, tq_ids: Iterable[int], done: Callable | None = None) -> None:
        """Drop these TaskQueues if they are still empty; then done(dropped_ids, kept_ids)."""
        with self._cv:
            self._drops.append((sorted(set(tq_ids)), done))
            self._wake()

    def recompute_later(self, group_ids: Iterable[int]) -> None:
        """These groups were marked due: take the marks when they are old enough."""
        with self._cv:
            if not self._groups:
                self._due_at = time.monotonic() + RECOMPUTE_DELAY
            self._groups.update(group_ids)
            self._wake()

    def idle(self, timeout: float = 30.0) -> bool:
        """Wait until nothing is pending (tests and benchmarks); False on time-out."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._drops or self._groups or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(min(left, 0.05))
        return True

    def stop(self, timeout: float = 30.0) -> None:
        """Finish what is pending, then end the thread and close its database connection
        (before a test or benchmark drops its database)."""
        self.idle(timeout)
        with self._cv:
            thread, self._stopping = self._thread, True
            self._cv.notify_all()
        if thread is not None and thread.is_alive() and self._pid == os.getpid():
            thread.join(timeout)
        with self._cv:
            self._thread, self._stopping = None, False

    def _wake(self) -> None:
        if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
            # A forked worker inherits no thread: start one in this process.
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, name="matcher-housekeeping")
            self._thread.daemon = True
            self._thread.start()
            if not self._stop_at_exit:
                # A benchmark or command that ends finishes the work and closes the thread's
                # connection, so that its database can be dropped at once.
                atexit.register(self.stop, 5.0)
                self._stop_at_exit = True
        self._cv.notify_all()

    # --- doing ----------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            connection.close()

    def _loop(self) -> None:
        while True:
            work = self._next()
            if work is None:
                return
            drops, groups = work
            try:
                if drops:
                    self._drop(drops)
                if groups:
                    self._recompute(groups)
            except Exception:  # never let the thread die with work queued behind it
                log.exception("matcher housekeeping failed")
                self.counts["failures"] += 1
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()

    def _next(self):
        """Wait for work: drops at once, the marks of due groups once they are old enough."""
        with self._cv:
            while True:
                if self._stopping:
                    return None
                now = time.monotonic()
                due = bool(self._groups) and now >= self._due_at
                if self._drops or due:
                    drops, self._drops = self._drops, []
                    groups = set()
                    if due:
                        groups, self._groups = self._groups, set()
                    self._busy = True
                    return drops, groups
                self._cv.wait(self._due_at - now if self._groups else None)

    def _drop(self, drops) -> None:
        ids = sorted({tq for batch, _ in drops for tq in batch})
        try:
            dropped = set(drop_empty_taskqueues(ids, skip_locked=True))
            self.counts["drops"] += len(dropped)
        except DatabaseError:
            log.warning("could not drop empty TaskQueues %s now", ids, exc_info=True)
            self.counts["failures"] += 1
            connection.close()
            dropped = set()  # the cleanup cycle drops them; the views keep them meanwhile
        for batch, done in drops:
            if done is not None:
                done([t for t in batch if t in dropped], [t for t in batch if t not in dropped])

    def _recompute(self, groups: set[int]) -> None:
        try:
            done = recompute_due()
        except DatabaseError:
            log.warning("could not recompute due priorities now", exc_info=True)
            self.counts["failures"] += 1
            connection.close()
            done = None
        if done is None:  # failed: look again shortly
            with self._cv:
                if not self._groups:
                    self._due_at = time.monotonic() + RETRY_SECONDS
                self._groups.update(groups)
        else:
            self.counts["recomputes"] += bool(done)


housekeeper = Housekeeper()


def priorities_due(group_ids: Iterable[int]) -> None:
    """The TaskQueues of these groups appeared or vanished: their priorities are due. Call
    inside the transaction that changed them. In the background: marked in that transaction,
    recomputed later (see above); otherwise recomputed at once after the commit."""
    groups = sorted(set(group_ids))
    if not groups:
        return
    if not in_background():
        transaction.on_commit(lambda: _recompute_now(groups), robust=True)
        return
    taskqueue_priorities.mark_due(groups, timezone.now())
    transaction.on_commit(lambda: housekeeper.recompute_later(groups))


def _recompute_now(groups) -> None:
    taskqueue_priorities.recompute_priorities(groups)


def recompute_due() -> list[int]:
    """Recompute the groups whose marks are RECOMPUTE_DELAY old. The priorities cycle may run
    meanwhile: both lock the TaskQueue rows in one order
    (taskqueue_priorities._write_priorities)."""
    groups = taskqueue_priorities.take_marks(RECOMPUTE_DELAY)
    if groups:
        try:
            taskqueue_priorities.recompute_priorities(groups)
        except DatabaseError:
            # Put the marks back, due at once (should this fail too, the cycle takes over).
            with transaction.atomic():
                taskqueue_priorities.mark_due(
                    groups, timezone.now() - timedelta(seconds=RECOMPUTE_DELAY)
                )
            raise
    return groups


# --- dropping empty TaskQueues -------------------------------------------------------------------


def drop_empty_taskqueues(tq_ids: Iterable[int], skip_locked: bool = False) -> list[int]:
    """Delete those of these TaskQueues that hold no job; returns the ids deleted.

    The rows are locked first, and emptiness is checked under the lock, so a TaskQueue that a
    concurrent submission is filling is never removed from under it (that submission, which
    checks its foreign key at commit, retries instead).
    """
    ids = sorted(set(tq_ids))
    if not ids:
        return []
    with transaction.atomic():
        locked = list(
            TaskQueue.objects.select_for_update(skip_locked=skip_locked)
            .filter(pk__in=ids)
            .values_list("pk", flat=True)
        )
        busy = set(
            TaskQueueJob.objects.filter(task_queue_id__in=locked)
            .values_list("task_queue_id", flat=True)
            .distinct()
        )
        empty = [pk for pk in locked if pk not in busy]
        if empty:
            groups = set(
                TaskQueue.objects.filter(pk__in=empty).values_list("owner_group_id", flat=True)
            )
            TaskQueuePriorityCount.objects.filter(task_queue_id__in=empty)._raw_delete(
                TaskQueuePriorityCount.objects.db
            )
            TaskQueue.objects.filter(pk__in=empty)._raw_delete(TaskQueue.objects.db)
            changelog.taskqueues_dropped(empty)
            priorities_due(groups)
    return empty


def drop_if_empty(tq_ids: Iterable[int]) -> None:
    """After a move committed: drop the TaskQueues it left if they are empty now. A failure
    must not turn a done move into an error: it is logged, and the cleanup cycle drops them."""
    ids = [tq for tq in tq_ids if tq]
    if not ids:
        return
    try:
        drop_empty_taskqueues(ids)
    except DatabaseError:
        log.warning("dropping the empty TaskQueues %s failed", ids, exc_info=True)
