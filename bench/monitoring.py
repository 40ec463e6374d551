"""The operators' monitoring views at a grid's size: N jobs loaded, shaped into a
week of history (finished, failed, running, waiting), an hourly accounting of 30 days; then the
jobs list sorted by each column both ways, the site x state matrix, the error summary over a
day, the accounting page, and a CSV export of every job streamed with its memory measured.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/monitoring.py --scale full      # 1,000,000 jobs
    .venv/bin/python bench/monitoring.py --scale small         # the embedded server by default

Prints one JSON object per line: <page>_median_ms per case (target <= 300 ms at full scale),
export_rows, export_seconds, export_peak_traced_mib and export_rss_growth_mib. The jobs' states
are set with one UPDATE (a bench's shortcut: their TaskQueue memberships are not kept in step,
which no timed page reads). Everything happens in a throw-away database dropped at the end.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import tracemalloc
from datetime import timedelta

from _common import emit, throwaway_database
from load import time_requests  # the same warm-up and timing as the jobs list bench

SCALES = {"small": 20_000, "full": 1_000_000}
SORTS = ["id", "name", "owner", "group", "status", "cpu_time", "user_priority", "task_queue",
         "site", "created", "status_changed"]  # fmt: skip
REASONS = ["exit code 1", "exit code 3; bad input", "stalled: no heartbeat", "input missing",
           "killed: over its wall-clock limit of 7200 s"]  # fmt: skip


def shape_history(n: int) -> None:
    """40 % finished, 15 % failed (five reasons), 5 % running, the rest waiting; ended and
    running jobs placed at the demo's sites, their last change spread over the last week."""
    from django.db import connection

    from core import clock
    from simulation.demo import SITES

    sites = list(SITES)
    now = clock.now()
    with connection.cursor() as cur:
        cur.execute("SELECT min(id) FROM matcher_job")
        first = cur.fetchone()[0]
        status = (
            "CASE WHEN (id - %s) %% 20 < 8 THEN 'finished' WHEN (id - %s) %% 20 < 11 THEN 'failed' "
            "WHEN (id - %s) %% 20 = 11 THEN 'running' ELSE status END"
        )
        site = "CASE " + " ".join(
            f"WHEN id %% {len(sites)} = {i} THEN %s" for i in range(len(sites))
        )
        reason = "CASE " + " ".join(
            f"WHEN id %% {len(REASONS)} = {i} THEN %s" for i in range(len(REASONS))
        )
        cur.execute(
            f"UPDATE matcher_job SET status = {status}, site = {site} END, "
            f"status_reason = {reason} END WHERE (id - %s) %% 20 < 12",
            [first, first, first, *sites, *REASONS, first],
        )
        cur.execute(
            "UPDATE matcher_job SET status_changed = %s - ((id / 20) %% 168) * "
            "interval '1 hour' WHERE (id - %s) %% 20 < 12",
            [now, first],
        )
        cur.execute("UPDATE matcher_job SET status_reason = '' WHERE status <> 'failed'")


def accounting_bins(days: int = 30) -> int:
    """An hourly accounting of every (user, group) at every CE of the demo."""
    from accounting.models import AccountingBin
    from core import clock
    from matcher.models import ComputingElement
    from shares.models import User

    hour = clock.now().replace(minute=0, second=0, microsecond=0)
    ces = list(ComputingElement.objects.select_related("site"))
    owners = [(u, g) for u in User.objects.all() for g in u.grid_groups.all()]
    rows = [
        AccountingBin(hour=hour - timedelta(hours=h), group=g, user=u, site=ce.site.name,
                      ce=ce.name, running_minutes=600.0, finished=7, failed=1, cpu_seconds=9e4)
        for h in range(days * 24) for u, g in owners for ce in ces
    ]  # fmt: skip
    AccountingBin.objects.bulk_create(rows, batch_size=5000)
    return len(rows)


def time_pages(client, username: str, args, context: dict) -> None:
    cases = [
        ("jobs_list", f"/jobs/?ordering={'-' if desc else ''}{col}", {"sort": col, "desc": desc})
        for col in SORTS
        for desc in (False, True)
    ]
    cases += [
        ("site_state_matrix", "/monitoring/jobs/", {}),
        ("error_summary", "/monitoring/errors/?hours=24", {"hours": 24}),
        ("accounting", "/accounting/?hours=24&group_by=site", {"hours": 24, "by": "site"}),
        ("accounting", "/accounting/?hours=720&group_by=user", {"hours": 720, "by": "user"}),
    ]
    for page, url, extra in cases:
        times = time_requests(client, url, args.repeat, args.warmup)
        emit(f"{page}_median_ms", statistics.median(times), "ms", user=username,
             max_ms=round(max(times), 1), **extra, **context)  # fmt: skip


def time_export(client, context: dict) -> None:
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    t0 = time.perf_counter()
    answer = client.get("/jobs/?format=csv")
    size = lines = 0
    for chunk in answer.streaming_content:
        size += len(chunk)
        lines += chunk.count(b"\n")
    seconds = time.perf_counter() - t0
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    emit("export_rows", lines - 1, "rows", mib=round(size / 2**20, 1), **context)
    emit("export_seconds", seconds, "s", **context)
    emit("export_peak_traced_mib", peak / 2**20, "MiB", **context)
    emit("export_rss_growth_mib", (rss1 - rss0) / 1024, "MiB", **context)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--jobs", type=int, help="override the number of jobs of the scale")
    parser.add_argument("--repeat", type=int, default=7, help="timed requests per case")
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests per case")
    parser.add_argument("--no-export", action="store_true")
    args = parser.parse_args()
    n = args.jobs if args.jobs is not None else SCALES[args.scale]

    with throwaway_database("monitoring"):
        from django.db import connection
        from django.test import Client

        from matcher import bulk
        from shares.models import User
        from simulation import demo

        demo.create_world()
        context = {"jobs": n, "scale": args.scale, "db": "postgresql"}
        bulk.load_jobs(n, seed=1, batch_size=50_000)
        t0 = time.perf_counter()
        shape_history(n)
        bins = accounting_bins()
        with connection.cursor() as cur:  # as autovacuum leaves a table after a big UPDATE
            cur.execute("VACUUM ANALYZE")
        emit("shaped_s", time.perf_counter() - t0, "s", accounting_bins=bins, **context)
        for username in ("admin", "alice", "carol"):  # staff, own jobs, JobSharing
            client = Client()
            client.force_login(User.objects.get(username=username))
            time_pages(client, username, args, context)
        if not args.no_export:
            client = Client()
            client.force_login(User.objects.get(username="admin"))
            time_export(client, context)


if __name__ == "__main__":
    main()
