"""The job counts against the job table: a summary read from the rollups and the same counted by
GROUP BY, the job summary page and API, and what the claim pays for appending its delta.

    .venv/bin/python bench/rollups.py --scale small      # the embedded server without DATABASE_URL
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/rollups.py --scale full

Prints JSON lines (bench/RESULTS.md, How the benchmarks report): summary_groupby_median_ms and
summary_rollup_median_ms (staff, every job, per site and state), job_summary_page_median_ms and
job_summary_api_median_ms (target: at most 300 ms), claim_p50_ms with and without the delta
(claims in interleaved blocks, the same TaskQueues; claim_delta_ratio) and fold_ms for the
deltas those claims left. A throw-away database, dropped at the end.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from _common import emit, throwaway_database

SCALES = {"small": 20_000, "full": 1_000_000}
PAGE_TARGET_MS = 300


def _median_ms(fn, repeat: int) -> tuple[float, float]:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--jobs", type=int, help="override the number of jobs of the scale")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--claims", type=int, default=2000, help="claims timed, half each way")
    args = parser.parse_args()
    n = args.jobs if args.jobs is not None else SCALES[args.scale]

    with throwaway_database("rollups"):
        from django.db import connection
        from django.db.models import Count
        from django.test import Client

        from matcher import bulk, claims, job_counts
        from matcher.matching import Resource
        from matcher.models import Job, TaskQueue
        from matcher.services import rollups
        from shares.models import User
        from simulation import demo

        demo.create_world()
        templates = bulk.make_templates(random.Random(4))
        for t in templates:
            t.requirements["pilot_types"] = []
        bulk.load_jobs(n, seed=4, templates=templates)
        rollups.fold()
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
        context = {"jobs": n, "scale": args.scale, "db": "postgresql"}

        def groupby():
            rows = Job.objects.order_by().values_list("site", "status").annotate(c=Count("*"))
            return list(rows)

        med, top = _median_ms(groupby, args.repeat)
        emit("summary_groupby_median_ms", med, "ms", max_ms=round(top, 1), **context)
        med, top = _median_ms(lambda: job_counts.counts(None), args.repeat)
        emit("summary_rollup_median_ms", med, "ms", max_ms=round(top, 1), **context)
        client = Client()
        client.force_login(User.objects.get(username="admin"))
        for metric, url in (
            ("job_summary_page_median_ms", "/monitoring/jobs/"),
            ("job_summary_api_median_ms", "/api/v1/monitoring/job-summary/"),
        ):
            if client.get(url).status_code != 200:
                raise SystemExit(f"GET {url} answered {client.get(url).status_code}")
            med, top = _median_ms(lambda u=url: client.get(u), args.repeat)
            emit(metric, med, "ms", target_ms=PAGE_TARGET_MS, max_ms=round(top, 1), **context)

        # The claim with and without its delta, in interleaved blocks over the same TaskQueues.
        resource = Resource(
            site="any",
            grid_ce="any",
            setup="any",
            cpu_time=10**7,
            platforms=frozenset({"any"}),
            tags=frozenset({"any"}),
            pilot_type="any",
        )
        with_delta = claims._DRAWN_CLAIM_SQL
        cut = with_delta.index("), counted AS (")
        without = with_delta[:cut] + with_delta[with_delta.index(")\nSELECT (SELECT count(*)") :]
        tqs = list(TaskQueue.objects.values_list("pk", flat=True))
        rng = random.Random(1)
        times: dict[bool, list[float]] = {True: [], False: []}
        block = 50
        try:
            for i in range(max(2, args.claims // block)):
                delta = bool(i % 2)
                claims._DRAWN_CLAIM_SQL = with_delta if delta else without
                for k in range(block):
                    t0 = time.perf_counter()
                    got = claims.claim_in(tqs[k % len(tqs)], resource, "p", rng, "dirac")
                    if got.job is not None:
                        times[delta].append((time.perf_counter() - t0) * 1000)
        finally:
            claims._DRAWN_CLAIM_SQL = with_delta
        p50 = {d: statistics.median(t) for d, t in times.items()}
        for delta in (True, False):
            emit("claim_p50_ms", p50[delta], "ms", delta=delta, claims=len(times[delta]), **context)
        emit("claim_delta_ratio", p50[True] / p50[False], "x", **context)
        t0 = time.perf_counter()
        folded = rollups.fold()
        emit("fold_ms", (time.perf_counter() - t0) * 1000, "ms", deltas=folded, **context)


if __name__ == "__main__":
    main()
