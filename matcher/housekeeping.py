"""Work that follows a match or a TaskQueue change but that nobody should wait for.

- Dropping the TaskQueues a match emptied (the matcher has already taken them out of its own
  draw; see taskqueue_view.park).
- Recomputing the priorities of the groups whose TaskQueues appeared or vanished. The result is
  the one an inline recomputation gives, only later: a recomputation reads the state of the
  groups when it runs, and recomputations are coalesced, at most one every
  RECOMPUTE_INTERVAL seconds per process (a grid empties and fills TaskQueues many times a
  second; each recomputation covers every group named since the previous one).

One daemon thread per process does both, on its own database connection, after the commit of
what asked for it. Should the process die first, nothing is lost that the cycles do not
repair: `taskqueue_cleanup` drops empty TaskQueues and `priorities` recomputes every priority.

In tests (settings.TESTING) the work runs at once, in the caller's thread, as it always did
(`BACKGROUND`; tests of the background path switch it on).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import DatabaseError, connection

log = logging.getLogger(__name__)

BACKGROUND = not getattr(settings, "TESTING", False)
RECOMPUTE_INTERVAL = 1.0
RETRY_SECONDS = 1.0


class Housekeeper:
    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._drops: list[tuple[list[int], Callable | None]] = []
        self._groups: set[int] = set()
        self._busy = False
        self._thread: threading.Thread | None = None
        self._pid: int | None = None
        self._last_recompute = -float("inf")
        self.counts = {"drops": 0, "recomputes": 0, "failures": 0}

    # --- asking ---------------------------------------------------------------------------

    def drop_later(self, tq_ids: Iterable[int], done: Callable | None = None) -> None:
        """Drop these TaskQueues if they are still empty; then done(dropped_ids, kept_ids)."""
        with self._cv:
            self._drops.append((sorted(set(tq_ids)), done))
            self._wake()

    def recompute_later(self, group_ids: Iterable[int]) -> None:
        with self._cv:
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

    def _wake(self) -> None:
        if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
            # A forked worker inherits no thread: start one in this process.
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, name="matcher-housekeeping")
            self._thread.daemon = True
            self._thread.start()
        self._cv.notify_all()

    # --- doing ----------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            drops, groups = self._next()
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
        """Wait for work; recomputations wait for RECOMPUTE_INTERVAL since the last one."""
        with self._cv:
            while True:
                now = time.monotonic()
                due = self._groups and now - self._last_recompute >= RECOMPUTE_INTERVAL
                if self._drops or due:
                    drops, self._drops = self._drops, []
                    groups = set()
                    if due:
                        groups, self._groups = self._groups, set()
                        self._last_recompute = now
                    self._busy = True
                    return drops, groups
                wait = RECOMPUTE_INTERVAL - (now - self._last_recompute) if self._groups else None
                self._cv.wait(wait)

    def _drop(self, drops) -> None:
        from matcher.services import drop_empty_taskqueues

        ids = sorted({tq for batch, _ in drops for tq in batch})
        try:
            dropped = set(drop_empty_taskqueues(ids))
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
        from matcher import priorities

        try:
            priorities.recompute_priorities(groups)
            self.counts["recomputes"] += 1
        except DatabaseError:
            log.warning("could not recompute the priorities of %s now", groups, exc_info=True)
            self.counts["failures"] += 1
            connection.close()
            with self._cv:  # try again shortly: nothing else would before the next cycle
                self._groups.update(groups)
                self._last_recompute = time.monotonic() - RECOMPUTE_INTERVAL + RETRY_SECONDS


housekeeper = Housekeeper()


def priorities_due(group_ids: Iterable[int]) -> None:
    """The TaskQueues of these groups changed (appeared or vanished): recompute their
    priorities, in the background unless BACKGROUND is off. Call after the commit."""
    groups = set(group_ids)
    if not groups:
        return
    if BACKGROUND:
        housekeeper.recompute_later(groups)
    else:
        from matcher import priorities

        priorities.recompute_priorities(groups)
