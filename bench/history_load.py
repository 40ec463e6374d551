"""A year of a large grid's history, written the way bench/history.py needs it: finished and
failed jobs with their status histories, a year of hourly accounting, notices.

The job rows and their four status-history rows each (activated -> sent -> running -> finished
or failed, spaced as the simulator spaces them: a wait in the TaskQueue, half a minute to start,
a run of a fraction of the job's CPU time) are COPY text made here, batch by batch, and written
by two connections at once while this thread makes the next batch, as matcher.bulk does for
waiting jobs. They go straight into the tables, not through the lifecycle's moves: a year of
history is a fixture, not a year of moves. The schema's indexes stay as they are (production
has them): the load time printed is the cost of that.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

YEAR = timedelta(days=365)
WRITERS = 2
FAILED_FRACTION = 0.15
KINDS = ["mc-sim", "reco", "stripping", "user-ana", "merge", "test"]
# The job columns a history row fills (the others take their database defaults).
JOB_COLUMNS = (
    "id", "owner_id", "owner_group_id", "name", "setup", "cpu_time", "sites", "banned_sites",
    "grid_ces", "platforms", "submit_pools", "pilot_types", "grid_middlewares", "tags",
    "user_priority", "status", "status_reason", "task_queue_id", "site", "grid_ce",
    "pilot_reference", "jdl", "reschedule_count", "created", "status_changed", "exit_code",
    "hostname", "error_code", "error_category",
)  # fmt: skip
HISTORY_COLUMNS = ("job_id", "at", "from_status", "to_status", "reason")


@dataclass
class Owners:
    """Who owns the history: (user id, group id) pairs with their weights; `pinned` owns every
    `stride`-th job exactly (the bench's user with a known number of jobs)."""

    pairs: list[tuple[int, int]]
    weights: list[float]
    pinned: tuple[int, int]
    stride: int


def _ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat()


def _batch_text(lo: int, hi: int, n: int, start: float, owners: Owners, templates, ces, rng):
    """COPY text of jobs lo..hi-1 (of n spread over the year from `start`) and their history."""
    from matcher.errors import describe
    from simulation.failures import FAILURES

    span = YEAR.total_seconds() - 86400  # the last ends before today
    fails = [(f.code, f.exit_code, describe(f.code)) for f in FAILURES]
    fail_w = [f.weight for f in FAILURES]
    jobs, hist = [], []
    size = hi - lo
    pairs = rng.choices(owners.pairs, owners.weights, k=size)
    tpls = rng.choices(range(len(templates)), k=size)
    where = rng.choices(range(len(ces)), k=size)
    for k in range(size):
        i = lo + k
        owner, group = owners.pinned if i % owners.stride == 0 else pairs[k]
        setup, cpu, lists = templates[tpls[k]]
        site, ce = ces[where[k]]
        created = start + span * (i - 1) / n + rng.random() * 60
        sent = created + rng.expovariate(1 / 900.0)
        run = sent + 20 + rng.random() * 40
        failed = rng.random() < FAILED_FRACTION
        end = run + cpu * (0.05 + rng.random() * (0.45 if failed else 0.95))
        tq = 100_000 + (i // 5000)  # TaskQueues long gone; the id stays as a record
        pilot = f"https://{ce}:9619/{i // 20:x}"
        kind = KINDS[i % 6]
        name = f"{kind}-{2026 + (i * 12 // n) // 12}w{(i * 52 // n) + 1:02d}-{i:08d}"
        if failed:
            code, exit_code, err = rng.choices(fails, fail_w)[0]
            status, reason, ec, cat = "failed", err.diag[:255], str(code), err.category
            exit_s = "\\N" if exit_code is None else str(exit_code)
        else:
            status, reason, ec, cat, exit_s = "finished", "payload done", "\\N", "", "0"
        c, e = _ts(created), _ts(end)
        jobs.append(
            f"{i}\t{owner}\t{group}\t{name}\t{setup}\t{cpu}\t{lists}\t{1 + i % 5}\t{status}\t"
            f"{reason}\t{tq}\t{site}\t{ce}\t{pilot}\t\t0\t{c}\t{e}\t{exit_s}\twn{i % 997}.{site}"
            f"\t{ec}\t{cat}\n"
        )
        hist.append(
            f"{i}\t{c}\t\tactivated\tsubmitted; joined TaskQueue {tq}\n"
            f"{i}\t{_ts(sent)}\tactivated\tsent\tmatched to pilot {pilot} at {site}\n"
            f"{i}\t{_ts(run)}\tsent\trunning\trunning on {ce}\n"
            f"{i}\t{e}\trunning\t{status}\t{reason}\n"
        )
    return "".join(jobs).encode(), "".join(hist).encode()


def _write(data: tuple[bytes, bytes]) -> None:
    from django.db import connection, transaction

    from core import db
    from matcher.models import Job, JobStatusHistory

    try:
        with transaction.atomic(), connection.cursor() as cur:
            db.copy_in(cur, Job._meta.db_table, JOB_COLUMNS, data[0])
            db.copy_in(cur, JobStatusHistory._meta.db_table, HISTORY_COLUMNS, data[1])
    finally:
        connection.close()


def load_history_jobs(
    n: int, owners: Owners, templates, ces, batch: int = 50_000, seed: int = 7, progress=None
) -> float:
    """Jobs 1..n (ids below the waiting ones: the sequence was set past n before they were
    loaded) and 4n history rows; returns the seconds it took."""
    from core import clock

    rng = random.Random(seed)
    start = (clock.now() - YEAR).timestamp()
    t0 = time.perf_counter()
    pending: set = set()
    with ThreadPoolExecutor(WRITERS) as pool:
        for lo in range(1, n + 1, batch):
            hi = min(n + 1, lo + batch)
            data = _batch_text(lo, hi, n, start, owners, templates, ces, rng)
            while len(pending) >= WRITERS:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    f.result()
            pending.add(pool.submit(_write, data))
            if progress:
                progress(hi - 1, n, time.perf_counter() - t0)
        for f in pending:
            f.result()
    return time.perf_counter() - t0


def load_accounting(owners: Owners, ces, pairs_per_hour: int, seed: int = 8) -> int:
    """A year of hourly bins: each hour, `pairs_per_hour` (user, group) pairs at every CE."""
    from django.db import connection, transaction

    from accounting.models import AccountingBin
    from core import clock, db

    rng = random.Random(seed)
    hour0 = clock.now().replace(minute=0, second=0, microsecond=0)
    columns = ("hour", "group_id", "user_id", "site", "ce", "running_minutes", "finished",
               "failed", "cpu_seconds", "wall_seconds")  # fmt: skip
    rows = 0
    for day in range(365):
        lines = []
        for h in range(24):
            at = (hour0 - timedelta(hours=day * 24 + h)).isoformat()
            for user, group in rng.sample(owners.pairs, min(pairs_per_hour, len(owners.pairs))):
                for site, ce in ces:
                    fin, fail = rng.randrange(40), rng.randrange(8)
                    lines.append(
                        f"{at}\t{group}\t{user}\t{site}\t{ce}\t{rng.random() * 6000:.1f}\t"
                        f"{fin}\t{fail}\t{fin * 9000.0}\t{fin * 10000.0}\n"
                    )
        with transaction.atomic(), connection.cursor() as cur:
            db.copy_in(cur, AccountingBin._meta.db_table, columns, "".join(lines))
        rows += len(lines)
    return rows


def load_notices(n_jobs: int, owners: Owners, every: int = 100) -> int:
    """A sent e-mail notice for every `every`-th history job (the ones whose owners asked)."""
    from django.db import connection, transaction

    from core import clock, db
    from notifications.models import Notice

    columns = ("user_id", "kind", "object_id", "channel", "name", "episode", "outcome",
               "final_state", "reason", "target", "state", "attempts", "error", "created",
               "updated", "sent_at")  # fmt: skip
    now = clock.now().isoformat()
    rows = 0
    for lo in range(1, n_jobs + 1, 200_000):
        lines = []
        for i in range(lo, min(n_jobs + 1, lo + 200_000), every):
            pair = owners.pinned if i % owners.stride == 0 else owners.pairs[i % len(owners.pairs)]
            user = pair[0]
            outcome = "failed" if i % 7 == 0 else "finished"
            lines.append(
                f"{user}\tjob\t{i}\temail\tjob {i}\t0\t{outcome}\t{outcome}\t\t"
                f"u{user}@example.org\tsent\t1\t\t{now}\t{now}\t{now}\n"
            )
        with transaction.atomic(), connection.cursor() as cur:
            db.copy_in(cur, Notice._meta.db_table, columns, "".join(lines))
        rows += len(lines)
    return rows
