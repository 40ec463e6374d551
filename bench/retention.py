"""The retention cycle's cost at 1,000,000 finished jobs (each with 4 status-history rows).

    .venv/bin/python bench/retention.py --scale small
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/retention.py --scale full

The jobs are loaded with `matcher.bulk.load_jobs` (COPY on PostgreSQL), then set-based updates
make 80 % of them final 10 days ago (finished, failed, cancelled), 5 % final 40 days ago (a
day's worth: ~55,000 at full scale, what a grid of 20 million jobs a year expires each day),
5 % final 30 days ago (the exported slice), 5 % final yesterday, 5 % still waiting; 3 more
history rows per final job. Three passes, run the way the cycle runs them
(RetentionMaxSecondsPerRun per run, until nothing is left), with RetentionBatchSize rows per
transaction:
0. RetentionJobDays 35: the day's worth, while the stall meter (bench/stalls.py) claims, moves
   and heartbeats jobs beside it: `retention_max_stall_ms`, the longest single write;
1. RetentionJobDays 20 with the export on: the 30-day-old slice, written to JSON lines first;
2. RetentionJobDays 7, no export, while a matcher claims waiting jobs beside it: the rest.
Prints rows/s (jobs, and rows with their history), the batch duration p50/p99 (each batch is
one transaction: its locks last that long), the total, and the matcher's claim p99 idle and
during the deletion. Checks that every waiting and young job and its history survived.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

from _common import emit, throwaway_database

SCALES = {"small": 20_000, "full": 1_000_000}


def build(finished: int) -> dict:
    """Load the jobs; returns how many are in each group."""
    from django.db import connection

    from core import clock
    from matcher import bulk
    from matcher.models import Job, JobStatusHistory, TaskQueueJob, TaskQueuePriorityCount
    from simulation import demo

    demo.create_world()
    total = finished * 100 // 90  # 90 % old final jobs (80 % + the two 5 % slices)
    t0 = time.perf_counter()
    bulk.load_jobs(total, seed=5)
    job, history = Job._meta.db_table, JobStatusHistory._meta.db_table
    member, counts = TaskQueueJob._meta.db_table, TaskQueuePriorityCount._meta.db_table

    def ago(days: int) -> str:
        return f"(%(now)s::timestamptz - make_interval(days => {days}))"

    final = "CASE id %% 3 WHEN 0 THEN 'finished' WHEN 1 THEN 'failed' ELSE 'cancelled' END"
    group = "(id %% 100)"
    with connection.cursor() as cur:
        # <5 waiting, 5..9 final yesterday, 10..14 final 30 days ago, 15..19 final 40 days ago
        # (the day's worth), the rest 10 days ago.
        cur.execute(
            f"UPDATE {job} SET status = {final}, status_changed = CASE "
            f"WHEN {group} < 10 THEN {ago(1)} WHEN {group} < 15 THEN {ago(30)} "
            f"WHEN {group} < 20 THEN {ago(40)} "
            f"ELSE {ago(10)} END, created = {ago(41)} WHERE {group} >= 5",
            {"now": clock.now()},
        )
        cur.execute(
            f"INSERT INTO {history} (job_id, at, from_status, to_status, reason) "
            f"SELECT j.id, j.status_changed, s.f, "
            f"CASE WHEN s.t = 'final' THEN j.status ELSE s.t END, 'bench' FROM {job} j "
            "CROSS JOIN (SELECT 'activated' AS f, 'sent' AS t UNION ALL "
            "SELECT 'sent', 'running' UNION ALL SELECT 'running', 'final') s "
            "WHERE j.status <> 'activated'"
        )
        cur.execute(
            f"DELETE FROM {member} WHERE job_id IN (SELECT id FROM {job} "
            "WHERE status <> 'activated')"
        )
        cur.execute(f"DELETE FROM {counts}")
        cur.execute(
            f"INSERT INTO {counts} (task_queue_id, user_priority, jobs) "
            f"SELECT task_queue_id, user_priority, COUNT(*) FROM {member} "
            "GROUP BY task_queue_id, user_priority"
        )
    with connection.cursor() as cur:
        cur.execute(f"VACUUM ANALYZE {job}, {history}, {member}, {counts}")
    return {
        "jobs": total,
        "history_rows": JobStatusHistory.objects.count(),
        "setup_s": round(time.perf_counter() - t0, 1),
    }


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Matcher(threading.Thread):
    """Claims waiting jobs in a loop on its own connection, timing each claim."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.seconds: list[float] = []

    def run(self):
        from django.db import connections

        from matcher.dispatcher import match_job
        from matcher.matching import Resource

        anything = Resource(
            site="any",
            grid_ce="any",
            setup="any",
            cpu_time=10**7,
            platforms=frozenset({"any"}),
            tags=frozenset({"any"}),
            pilot_type="any",
        )
        try:
            while not self.stop.is_set():
                t0 = time.perf_counter()
                m = match_job(anything, "bench-pilot")
                self.seconds.append(time.perf_counter() - t0)
                if m is None:
                    break
                time.sleep(0.01)
        finally:
            connections.close_all()


def drain(days: int) -> dict:
    """Run retention the way the cycle does, run after run, until nothing is left."""
    from core import gdpconfig
    from matcher.models import JobStatusHistory
    from retention.services import run_retention

    gdpconfig.set_value("RetentionJobDays", days)
    history_before = JobStatusHistory.objects.count()
    batches: list[float] = []
    deleted, runs = 0, 0
    t0 = time.perf_counter()
    while True:
        tally = run_retention()
        runs += 1
        batches += tally.batch_seconds
        deleted += tally.deleted.get("jobs", 0)
        if not tally.more:
            break
    total = time.perf_counter() - t0
    rows = deleted + history_before - JobStatusHistory.objects.count()
    return {
        "jobs": deleted,
        "rows": rows,
        "total_s": total,
        "runs": runs,
        "batches": batches,
        "exported": tally.exported_to,
    }


def retention_stall(job_days: int | None = None, meter=None, max_seconds: float | None = None):
    """Run the retention cycle, run after run until nothing is left, while the stall meter
    (bench/stalls.py) claims, moves and heartbeats jobs beside it.

    Needs Django set up on a database holding the expired jobs (typically a day's worth) and
    waiting jobs the meter's writer can claim (any resource: every wildcard). `job_days`: the
    RetentionJobDays to set first (None: as it is); `meter`: a started StallMeter to reuse,
    else one is started and stopped here; `max_seconds`: each run's budget (None:
    RetentionMaxSecondsPerRun). Returns {"max_stall_ms", "p99_ms", "writes", "slowest_write",
    "idle_max_ms", "jobs", "runs", "batches", "batch_p99_ms", "largest_batch", "total_s"}:
    the longest single write while retention ran, the same writer's longest over one second
    with nothing beside it, what was deleted and how (each batch is one transaction)."""
    from stalls import StallMeter

    from core import gdpconfig
    from retention.services import run_retention

    if job_days is not None:
        gdpconfig.set_value("RetentionJobDays", job_days)
    runs: list = []

    def cycle():
        while True:
            runs.append(run_retention(max_seconds=max_seconds))
            if not runs[-1].more:
                return

    own = meter is None
    meter = meter or StallMeter().start()
    try:
        idle = meter.idle_ms(1.0)
        t0 = time.perf_counter()
        window, _ = meter.window(cycle)
        total = time.perf_counter() - t0
    finally:
        if own:
            meter.stop()
    batches = [s for tally in runs for s in tally.batch_seconds]
    return {
        "max_stall_ms": window.max_ms,
        "p99_ms": window.p99_ms(),
        "writes": len(window.writes),
        "slowest_write": window.slowest(),
        "idle_max_ms": idle,
        "jobs": sum(tally.deleted.get("jobs", 0) for tally in runs),
        "runs": len(runs),
        "batches": len(batches),
        "batch_p99_ms": _percentile(batches, 0.99) * 1e3,
        "largest_batch": max((tally.largest_batch for tally in runs), default=0),
        "total_s": total,
    }


def report(label: str, result: dict, **context) -> None:
    total = max(result["total_s"], 1e-9)
    emit(f"retention{label}_jobs_per_s", result["jobs"] / total, "jobs/s", **context)
    emit(
        f"retention{label}_rows_per_s",
        result["rows"] / total,
        "rows/s",
        note="jobs and their status history",
        **context,
    )
    emit(f"retention{label}_batch_p50_ms", _percentile(result["batches"], 0.5) * 1e3, "ms")
    emit(
        f"retention{label}_batch_p99_ms",
        _percentile(result["batches"], 0.99) * 1e3,
        "ms",
        note="one batch = one transaction: how long its row locks last",
        batches=len(result["batches"]),
    )
    emit(
        f"retention{label}_total_s",
        result["total_s"],
        "s",
        jobs=result["jobs"],
        rows=result["rows"],
        runs=result["runs"],
        **context,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--jobs", type=int, help="override the number of finished jobs")
    args = parser.parse_args()
    n = args.jobs if args.jobs is not None else SCALES[args.scale]

    with throwaway_database("retention"):
        from django.db.models import Exists, OuterRef

        from core import clock, gdpconfig
        from matcher.models import Job, JobStatusHistory

        setup = build(n)
        print(json.dumps({"setup": setup, "finished_jobs": n}), file=sys.stderr)
        context = {"scale": args.scale, "database": "postgresql"}
        old = Job.objects.exclude(status="activated").filter(
            status_changed__lt=clock.now() - timedelta(days=7)
        )
        keep = Job.objects.count() - old.count()

        day = retention_stall(job_days=35)
        emit(
            "retention_max_stall_ms",
            day["max_stall_ms"],
            "ms",
            target="< 1000",
            note="a day's expired jobs deleted while claims, moves and heartbeats go on",
            slowest_write=day["slowest_write"],
            writes=day["writes"],
            write_p99_ms=round(day["p99_ms"], 1),
            idle_max_ms=round(day["idle_max_ms"], 1),
            jobs=day["jobs"],
            batches=day["batches"],
            batch_p99_ms=round(day["batch_p99_ms"], 1),
            total_s=round(day["total_s"], 2),
            **context,
        )

        export_dir = Path(tempfile.mkdtemp(prefix="gridwms-retention-"))
        try:
            gdpconfig.set_value("RetentionExport", True)
            gdpconfig.set_value("RetentionExportDirectory", str(export_dir))
            exported = drain(days=20)
            size = sum(p.stat().st_size for p in export_dir.rglob("*.jsonl"))
            report("_export", exported, **context, export_mb=round(size / 2**20, 1))
        finally:
            shutil.rmtree(export_dir, ignore_errors=True)
        gdpconfig.set_value("RetentionExport", False)

        idle = Matcher()
        idle.start()
        time.sleep(3)
        idle.stop.set()
        idle.join()
        beside = Matcher()
        beside.start()
        try:
            result = drain(days=7)
        finally:  # its connection closed before the database is dropped, whatever happened
            beside.stop.set()
            beside.join()
        report("", result, **context, finished_jobs=n)
        emit("retention_match_p99_ms_idle", _percentile(idle.seconds, 0.99) * 1e3, "ms")
        emit(
            "retention_match_p99_ms_during",
            _percentile(beside.seconds, 0.99) * 1e3,
            "ms",
            claims=len(beside.seconds),
            note="a matcher claiming waiting jobs beside the deletion",
        )
        left = Job.objects.count()
        orphans = JobStatusHistory.objects.filter(
            ~Exists(Job.objects.filter(pk=OuterRef("job_id")))
        ).count()
        if left != keep or orphans:
            raise SystemExit(f"{left} jobs left, expected {keep}; {orphans} orphan history rows")
        emit(
            "retention_deleted_jobs",
            day["jobs"] + exported["jobs"] + result["jobs"],
            "jobs",
            kept=left,
        )


if __name__ == "__main__":
    main()
