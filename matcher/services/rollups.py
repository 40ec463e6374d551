"""Jobs counted as they move (docs/developer-guide.md, How jobs are counted): the rollups the
summaries read instead of a GROUP BY over the job table.

Every move of the one job writer appends, in its own transaction, a JobCountDelta row: n jobs
of (owner, group) from (site, state) to (site, state), '' for a job created or deleted. A crash
mid-move rolls the delta back with the move. The claim appends its delta inside its own
statement (matcher/claims.py, CLAIM_DELTA); nothing on the hot path updates a shared counter
row. `fold` moves the deltas into the totals (JobCount: + to, - from) and the hourly entries
(JobHourCount), deleting them in the same transaction; readers (matcher/job_counts.py) sum
totals and the deltas not folded yet, in one statement, so they see every committed move
exactly once whether or not it is folded. `rebuild` recounts from the job table (repairs,
after a load that bypassed the writer); `manage.py rebuild_job_counts` runs it. Both take the
failed jobs' counts (matcher/services/failures.py, the error summary's) along, in the same
transaction.

Folding: the `job_counts` cycle every minute, and, in a process that moves jobs with
housekeeping in the background, a daemon thread FOLD_SECONDS after its first unfolded move,
so that the deltas a reader sums stay few.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from django.db import DatabaseError, OperationalError, connection, transaction

from core import db
from core.cycles import cycle
from matcher.models import Job, JobCount, JobCountDelta, JobHourCount
from matcher.services import failures, housekeeping

log = logging.getLogger(__name__)

DELTA_COLUMNS = (
    "owner_id",
    "owner_group_id",
    "from_site",
    "from_status",
    "to_site",
    "to_status",
    "n",
    "at",
)
DELTA_TYPES = ("bigint", "bigint", "text", "text", "text", "text", "integer", "timestamptz")
FOLD_BATCH = 200_000  # deltas folded per transaction
FOLD_SECONDS = 2.0
# Serialises folds (two would only wait for each other's rows); the readers never take it.
FOLD_LOCK = 0x6A6F62636F756E74  # "jobcount"

DELTAS = JobCountDelta._meta.db_table
TOTALS = JobCount._meta.db_table
HOURS = JobHourCount._meta.db_table


# --- writing deltas (called by the mover, in the transaction of the move) ------------------------


def record(moves: Iterable[tuple], at: datetime) -> None:
    """Deltas of moves in this transaction: (owner, group, from site, from state, to site, to
    state) each one job ('' state: created or deleted); the same move of many jobs is one row
    of n. Moves that change neither site nor state are not counted."""
    counted = Counter(m for m in moves if (m[2], m[3]) != (m[4], m[5]))
    if not counted:
        return
    rows = [(*key, n, at) for key, n in sorted(counted.items())]
    with connection.cursor() as cur:
        if len(rows) == 1:
            marks = ", ".join(["%s"] * len(DELTA_COLUMNS))
            names = ", ".join(DELTA_COLUMNS)
            cur.execute(f"INSERT INTO {DELTAS} ({names}) VALUES ({marks})", rows[0])
        else:
            db.bulk_insert(cur, DELTAS, DELTA_COLUMNS, rows, pg_types=DELTA_TYPES)
    fold_soon()


def record_counts(counts: Counter, at: datetime) -> None:
    """Deltas given as {(owner, group, from site, from state, to site, to state): n} (a bulk
    path that knows its numbers, not its rows)."""
    rows = [(*key, n, at) for key, n in sorted(counts.items()) if n]
    if rows:
        db.bulk_insert(None, DELTAS, DELTA_COLUMNS, rows, pg_types=DELTA_TYPES)
        fold_soon()


# --- folding -------------------------------------------------------------------------------------

# One statement: take (delete) up to a batch of the oldest deltas, add their net per key to the
# totals and their entries (a new state, or a job created) to the hours, by increments (ON
# CONFLICT ... jobs + excluded.jobs), keys in one order so that two writers never deadlock.
_FOLD_SQL = f"""
WITH gone AS (
    DELETE FROM {DELTAS} WHERE id IN (SELECT id FROM {DELTAS} ORDER BY id LIMIT %(limit)s)
    RETURNING owner_id, owner_group_id, from_site, from_status, to_site, to_status, n, at
), parts AS (
    SELECT owner_id, owner_group_id, from_site AS site, from_status AS status, -n AS n
    FROM gone WHERE from_status <> ''
    UNION ALL
    SELECT owner_id, owner_group_id, to_site, to_status, n FROM gone WHERE to_status <> ''
), hours AS (
    INSERT INTO {HOURS} (hour, owner_id, owner_group_id, site, status, jobs)
    SELECT date_trunc('hour', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
        owner_id, owner_group_id, to_site, to_status, sum(n)
    FROM gone WHERE to_status <> '' AND to_status <> from_status
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (hour, owner_id, owner_group_id, site, status)
    DO UPDATE SET jobs = {HOURS}.jobs + excluded.jobs
), totals AS (
    INSERT INTO {TOTALS} (owner_id, owner_group_id, site, status, jobs)
    SELECT owner_id, owner_group_id, site, status, sum(n) FROM parts
    GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0 ORDER BY 1, 2, 3, 4
    ON CONFLICT (owner_id, owner_group_id, site, status)
    DO UPDATE SET jobs = {TOTALS}.jobs + excluded.jobs
)
SELECT count(*) FROM gone
"""


def fold(limit: int = FOLD_BATCH) -> int:
    """Fold the deltas into the totals and hours, a batch per transaction, until none is left
    (those committed meanwhile wait for the next fold); returns the number folded. A fold
    already running elsewhere: 0, at once."""
    done = 0
    while True:
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_xact_lock(%s)", [FOLD_LOCK])
            if not cur.fetchone()[0]:
                return done
            # The failed jobs' tables first, as the mover and `rebuild` take them.
            failed = failures.fold(cur, limit)
            cur.execute(_FOLD_SQL, {"limit": limit})
            n = cur.fetchone()[0]
            # Totals that came to nothing go: a reader's state list is the states with jobs.
            cur.execute(f"DELETE FROM {TOTALS} WHERE jobs = 0")
        done += n
        if n < limit and failed < limit:
            return done


def rebuild(attempts: int = 5) -> dict:
    """Recount the totals from the job table (repairs; after a load that bypassed the mover):
    in one transaction that locks the rollup tables against the mover's deltas and other folds
    for its time, so that no move is counted twice or lost. The hours are left as they are
    (the history they count is not all in the job table any more); the failed jobs' counts
    (matcher/services/failures.py) are recounted. A transaction that moves several jobs may
    hold one table's delta lock while it waits for the other's: PostgreSQL ends the deadlock
    by failing one side (the rebuild, which waited first), and the rebuild runs again."""
    for attempt in range(attempts):
        try:
            return _rebuild()
        except OperationalError:
            if attempt == attempts - 1:
                raise
            log.info("rebuilding the job counts lost a race (attempt %d)", attempt + 2)
            time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")


def _rebuild() -> dict:
    with transaction.atomic(), connection.cursor() as cur:
        # In the mover's order (the failed jobs' deltas before the job counts').
        cur.execute(
            f"LOCK TABLE {failures.DELTAS}, {failures.COUNTS}, {DELTAS}, {TOTALS} IN EXCLUSIVE MODE"
        )
        cur.execute(f"SELECT count(*) FROM {DELTAS}")
        dropped = cur.fetchone()[0]
        cur.execute(f"DELETE FROM {DELTAS}")
        cur.execute(f"DELETE FROM {TOTALS}")
        cur.execute(REBUILD_SQL)
        cur.execute(f"SELECT count(*), coalesce(sum(jobs), 0) FROM {TOTALS}")
        rows, jobs = cur.fetchone()
        failed = failures.rebuild(cur)
    return {"rows": rows, "jobs": int(jobs), "deltas_dropped": dropped, **failed}


@cycle("job_counts")
def job_counts_cycle() -> dict:
    """Fold what the processes that moved jobs have not folded yet (one that died, one
    without housekeeping in the background)."""
    return {"folded": fold()}


REBUILD_SQL = (
    f"INSERT INTO {TOTALS} (owner_id, owner_group_id, site, status, jobs) "
    f"SELECT owner_id, owner_group_id, site, status, count(*) FROM {Job._meta.db_table} "
    "GROUP BY 1, 2, 3, 4"
)


# --- folding soon, in the background -------------------------------------------------------------


class _Folder:
    """A daemon thread per process that folds FOLD_SECONDS after the first delta it was told
    of, on its own connection; the cycle folds whatever a process that died left."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._due = False
        self._pid: int | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.failures = 0

    def soon(self) -> None:
        if self._due and self._pid == os.getpid():
            return  # already due: the hot path pays one attribute read
        with self._cv:
            self._due = True
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="job-counts-fold")
                self._thread.daemon = True
                self._thread.start()
            self._cv.notify_all()

    def _run(self) -> None:
        try:
            while True:
                with self._cv:
                    while not self._due:
                        self._cv.wait()
                    # The moves of the next seconds fold together; a stop ends the wait.
                    self._cv.wait_for(lambda: self._stopping, timeout=FOLD_SECONDS)
                    if self._stopping:
                        return  # what is left folds in the next cycle
                    self._due = False
                try:
                    fold()
                except DatabaseError:
                    log.warning("folding the job counts failed", exc_info=True)
                    self.failures += 1
                finally:
                    # No session kept between folds: a test or benchmark may drop its
                    # database at any moment, and folds are seconds apart.
                    connection.close()
        finally:
            connection.close()

    def stop(self, timeout: float = 30.0) -> None:
        """End the thread (after the fold it may be doing) and its connection: a benchmark
        drops its database on the way out."""
        thread = self._thread
        if thread is None or self._pid != os.getpid():
            return
        with self._cv:
            self._stopping = self._due = True
            self._cv.notify_all()
        thread.join(timeout)
        with self._cv:
            self._stopping = self._due = False
            self._thread = None


folder = _Folder()


def fold_soon() -> None:
    """A delta was written: fold it within seconds, after the commit (in the background
    only: without it, the cycle and the tests fold when they choose)."""
    if housekeeping.in_background() and not (folder._due and folder._pid == os.getpid()):
        transaction.on_commit(folder.soon)
