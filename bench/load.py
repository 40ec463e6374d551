"""Load N jobs through `matcher.bulk.load_jobs`, then time the jobs list page and the jobs API.

    .venv/bin/python bench/load.py --scale small        # the embedded server without DATABASE_URL
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/load.py --scale full

Prints one JSON object per line (bench/RESULTS.md, How the benchmarks report): load_1m_jobs_s
(target 15 s, with whether the indexes were built at the end and the machine's load),
load_rows_per_s, then jobs_list_median_ms and jobs_api_median_ms per user and filter. Everything
happens in a throw-away database (Django's test database, uniquely named) that is dropped at the
end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _common import emit, throwaway_database

SCALES = {"small": 20_000, "full": 1_000_000}
# (user, label, query string): the staff user sees every job, alice only hers (and her
# JobSharing groups'), plus one filtered request.
CASES = [
    ("admin", "", ""),
    ("alice", "", ""),
    ("admin", "status=activated&group=lhcb_user", "?status=activated&group=lhcb_user"),
    ("alice", "status=activated&group=lhcb_user", "?status=activated&group=lhcb_user"),
]


def time_requests(client, url: str, repeat: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        response = client.get(url)
        if response.status_code != 200:
            raise SystemExit(f"GET {url} answered {response.status_code}")
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - t0) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"GET {url} answered {response.status_code}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--jobs", type=int, help="override the number of jobs of the scale")
    parser.add_argument("--batch-size", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=15, help="timed requests per case")
    parser.add_argument("--warmup", type=int, default=3, help="untimed requests per case")
    args = parser.parse_args()
    n = args.jobs if args.jobs is not None else SCALES[args.scale]

    with throwaway_database("bench"):
        from django.test import Client

        from matcher import bulk
        from matcher.models import Job, JobStatusHistory, TaskQueueJob
        from shares.models import User
        from simulation import demo

        demo.create_world()
        context = {"jobs": n, "scale": args.scale, "db": "postgresql"}
        load_before = os.getloadavg()[0]  # the machine's load: timings on a shared one vary
        result = bulk.load_jobs(n, seed=args.seed, batch_size=args.batch_size)
        counts = [m.objects.count() for m in (Job, TaskQueueJob, JobStatusHistory)]
        if counts != [n, n, n]:
            raise SystemExit(f"loaded {counts} jobs/memberships/history rows, expected {n}")
        emit(
            "load_1m_jobs_s",
            result.seconds,
            "s",
            target=15,
            taskqueues=result.taskqueues,
            indexes_built_at_end=result.bulk_built,
            load_before=round(load_before, 2),
            **context,
        )
        emit("load_rows_per_s", result.rows_per_s, "jobs/s", **context)

        for username, label, query in CASES:
            client = Client()
            client.force_login(User.objects.get(username=username))
            for metric, url in (
                ("jobs_list_median_ms", "/jobs/"),
                ("jobs_api_median_ms", "/api/v1/jobs/"),
            ):
                times = time_requests(client, url + query, args.repeat, args.warmup)
                emit(
                    metric,
                    statistics.median(times),
                    "ms",
                    user=username,
                    filter=label,
                    requests=len(times),
                    max_ms=round(max(times), 1),
                    **context,
                )


if __name__ == "__main__":
    main()
