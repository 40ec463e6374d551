"""How long the grid's writes wait while a migration adds an index to the job table.

    .venv/bin/python bench/migration_stall.py --scale small
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/migration_stall.py --scale full

Loads N waiting jobs (`matcher.bulk.load_jobs`: 20,000 small, 1,000,000 full), then applies a
migration adding a two-column index to the job table twice, each time undone after, while the
stall meter (bench/stalls.py: claims, moves, heartbeats through the native services) writes
beside it: once the project's way (AddIndexConcurrently in a non-atomic migration: CREATE INDEX
CONCURRENTLY, writes go on), once the plain way (AddIndex: CREATE INDEX holds a SHARE lock on
the table until the index is built, and every write to a job waits), alternated, --repeat times
each. Prints the median of each kind's longest single write (`migration_max_stall_ms`,
`migration_plain_max_stall_ms`) with every build's, the same writer's longest over a second
with nothing beside it before each build, and the build times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from _common import emit, throwaway_database

SCALES = {"small": 20_000, "full": 1_000_000}
INDEX_NAME = "job_stall_bench"
TARGET_MS = 1000  # a pilot's report answered within a second, whatever the migration


def index_migration(concurrently: bool = True):
    """A migration of the matcher adding an index on the job table (error_category,
    status_changed), as a developer would write it: concurrently in a non-atomic migration, or
    the plain AddIndex in an atomic one."""
    from django.contrib.postgres.operations import AddIndexConcurrently
    from django.db import migrations, models
    from django.db.migrations.loader import MigrationLoader

    leaf = next(n for n in MigrationLoader(None).graph.leaf_nodes() if n[0] == "matcher")
    index = models.Index(fields=["error_category", "status_changed"], name=INDEX_NAME)
    add = AddIndexConcurrently if concurrently else migrations.AddIndex
    cls = type(
        "Migration",
        (migrations.Migration,),
        {"atomic": not concurrently, "dependencies": [leaf], "operations": [add("job", index)]},
    )
    return cls("9999_stall_bench_index", "matcher")


def _index_exists() -> bool:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [INDEX_NAME])
        return cur.fetchone() is not None


def migration_stall(concurrently: bool = True, meter=None) -> dict:
    """Apply a migration adding an index to the job table (bench.migration_stall.
    index_migration) while the stall meter writes, then undo it (not measured).

    Needs Django set up on a migrated database whose job table holds the jobs to index, and
    waiting jobs the meter's writer can claim (any resource: every wildcard); `meter`: a
    started bench.stalls.StallMeter to reuse, else one is started and stopped here. Returns
    {"max_stall_ms", "p99_ms", "writes", "slowest_write", "build_s", "idle_max_ms",
    "concurrently"}: the longest single write while the migration ran, the same writer's
    longest over one second with nothing beside it, the migration's own seconds."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor
    from stalls import StallMeter

    migration = index_migration(concurrently)
    executor = MigrationExecutor(connection)
    before = executor.loader.project_state()
    own = meter is None
    meter = meter or StallMeter().start()
    try:
        idle = meter.idle_ms(1.0)
        t0 = time.perf_counter()
        window, _ = meter.window(lambda: executor.apply_migration(before, migration))
        build = time.perf_counter() - t0
    finally:
        if own:
            meter.stop()
    if not _index_exists():
        raise SystemExit(f"the migration did not build {INDEX_NAME}")
    executor.unapply_migration(before, migration)
    if _index_exists():
        raise SystemExit(f"undoing the migration left {INDEX_NAME}")
    return {
        "max_stall_ms": window.max_ms,
        "p99_ms": window.p99_ms(),
        "writes": len(window.writes),
        "slowest_write": window.slowest(),
        "build_s": build,
        "idle_max_ms": idle,
        "concurrently": concurrently,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--jobs", type=int, help="override the number of jobs")
    parser.add_argument("--repeat", type=int, default=3, help="builds of each kind (median)")
    args = parser.parse_args()
    n = args.jobs if args.jobs is not None else SCALES[args.scale]

    with throwaway_database("migration_stall"):
        from django.db import connection
        from stalls import StallMeter

        from matcher import bulk
        from matcher.models import Job
        from simulation import demo

        demo.create_world()
        t0 = time.perf_counter()
        bulk.load_jobs(n, seed=7)
        with connection.cursor() as cur:
            cur.execute(f"VACUUM ANALYZE {Job._meta.db_table}")
        print(
            json.dumps({"jobs": n, "setup_s": round(time.perf_counter() - t0, 1)}), file=sys.stderr
        )
        context = {"scale": args.scale, "database": "postgresql", "jobs": n}
        runs = {True: [], False: []}
        with StallMeter() as meter:
            for _ in range(args.repeat):  # alternated: the machine's load falls on both alike
                for concurrently in (True, False):
                    runs[concurrently].append(migration_stall(concurrently, meter=meter))
        for concurrently, metric, note in (
            (
                True,
                "migration_max_stall_ms",
                "AddIndexConcurrently (non-atomic migration) on the job table, writes beside it",
            ),
            (
                False,
                "migration_plain_max_stall_ms",
                "the same index by a plain AddIndex: writes wait for the whole build",
            ),
        ):
            done = runs[concurrently]
            emit(
                metric,
                statistics.median(r["max_stall_ms"] for r in done),
                "ms",
                **({"target": f"< {TARGET_MS}"} if concurrently else {}),
                note=f"{note}; median of {len(done)} builds",
                each_ms=[round(r["max_stall_ms"], 1) for r in done],
                slowest_write=[r["slowest_write"] for r in done],
                idle_max_ms=[round(r["idle_max_ms"], 1) for r in done],
                build_s=[round(r["build_s"], 2) for r in done],
                **context,
            )


if __name__ == "__main__":
    main()
