"""One production job-brokerage cycle: 1,000 tasks against 500 PanDA queues.

    .venv/bin/python bench/brokerage.py --scale small
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/brokerage.py --scale full

The cycle includes loading the queue statistics (job counts by state from the jobs table,
pilots, last activity), running every check on every (task, queue) pair, weighting, and writing
the decisions (one trace per task, the jobs activated into TaskQueues). Prints
`job_brokerage_cycle_s` (median of the cycles, each over fresh tasks) and
`job_brokerage_db_fraction` (the share of that time spent waiting on the database).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time

from _common import emit, throwaway_database

# tasks per cycle, queues, sites, nuclei, jobs per task, jobs already running or waiting
SCALES = {"small": (100, 60, 20, 4, 3, 2_000), "full": (1_000, 500, 100, 20, 5, 100_000)}


class DBTimer:
    """A connection execute wrapper adding up the time spent in the database."""

    def __init__(self):
        self.seconds = 0.0
        self.queries = 0
        self.by_statement: dict[str, float] = {}

    def __call__(self, execute, sql, params, many, context):
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent = time.perf_counter() - t0
            self.seconds += spent
            self.queries += 1
            head = sql[:90]
            self.by_statement[head] = self.by_statement.get(head, 0.0) + spent

    def top(self, n=8) -> list:
        rows = sorted(self.by_statement.items(), key=lambda kv: -kv[1])[:n]
        return [[round(t, 3), sql] for sql, t in rows]


def build_world(rng, n_tasks, n_queues, n_sites, n_nuclei, jobs_per_task, n_background):
    from brokerage.models import NetworkLink, Nucleus, PandaQueue, Storage, Task, TaskJob
    from core import clock, gdpconfig
    from matcher import services as job_services
    from matcher.models import Job, JobStatus, Site
    from shares.models import GridGroup, User
    from simulation import demo

    demo.create_world()
    now = clock.now()
    sites = Site.objects.bulk_create([Site(name=f"BENCH.SITE{i:03d}") for i in range(n_sites)])
    storages = Storage.objects.bulk_create(
        [
            Storage(
                name=f"SITE{i:03d}_DATADISK",
                site=s,
                space_free=rng.uniform(100, 900) * 1024,
                space_total=1000 * 1024,
            )
            for i, s in enumerate(sites)
        ]
    )
    nuclei = Nucleus.objects.bulk_create(
        [Nucleus(name=f"NUC{i:02d}", site=sites[i]) for i in range(n_nuclei)]
    )
    for i, n in enumerate(nuclei):
        storages[i].nucleus = n
    Storage.objects.bulk_update(storages, ["nucleus"])
    queues = []
    for i in range(n_queues):
        site_i = i % n_sites
        multicore = i % 2 == 0
        queues.append(
            PandaQueue(
                name=f"BENCH_Q{i:03d}_{'MCORE' if multicore else 'SCORE'}",
                site=sites[site_i],
                nucleus=nuclei[site_i] if site_i < n_nuclei else None,
                status="offline" if i % 20 == 7 else "online",
                core_count=8 if multicore else 1,
                maxrss=rng.choice([2000, 3000, 4000]),
                maxwdir=rng.choice([0, 20_000, 160_000]),
                maxtime=rng.choice([0, 86400, 3 * 86400]),
                corepower=rng.uniform(8, 14),
                pledgedcpu=rng.choice([-1, 0, 1000, 5000]),
                releases=["ANY"] if i % 3 else ["AUTO"],
                software={
                    "cmtconfigs": ["x86_64-el9-gcc13-opt"],
                    "containers": ["any"],
                    "cvmfs": ["atlas"],
                    "architectures": [{"type": "cpu", "arch": ["x86_64"], "vendor": ["any"]}],
                    "tags": [],
                },
                wnconnectivity="full#IPv4",
                input_storage=storages[site_i],
                output_storage=storages[site_i],
                fairsharepolicy="type=evgen:100%,type=any:0%" if i % 25 == 3 else "",
                last_pilot=now,
                last_start=now,
            )
        )
    queues = PandaQueue.objects.bulk_create(queues)
    NetworkLink.objects.bulk_create(
        [
            NetworkLink(
                source=s,
                nucleus=n,
                queued_files=rng.randint(0, 200),
                mbps_1h=rng.choice([None, rng.uniform(1, 300)]),
                mbps_1d=rng.uniform(1, 300),
                closeness=rng.randint(0, 11),
            )
            for s in sites
            for n in nuclei
            if s.pk != n.site_id
        ]
    )
    owner = User.objects.get(username="erin")
    group = GridGroup.objects.get(name="lhcb_mc")
    setup = gdpconfig.get("DefaultSetup")  # the grid's one Setup, as a client's jobs get
    # Jobs already at the queues, so that the statistics have something to count.
    specs = [{"owner_group": group, "setup": setup, "cpu_time": 3600} for _ in range(n_background)]
    background = job_services.define_jobs(owner, specs, reason="bench")
    states = [JobStatus.RUNNING, JobStatus.RUNNING, JobStatus.STARTING, JobStatus.TRANSFERRING]
    for j in background:
        j.status = rng.choice(states)
        j.site = rng.choice(sites).name
    Job.objects.bulk_update(background, ["status", "site"], batch_size=5000)

    def make_tasks(cycle):
        tasks = Task.objects.bulk_create(
            [
                Task(
                    name=f"bench.c{cycle}.t{i}",
                    owner=owner,
                    owner_group=group,
                    setup=setup,  # bulk_create skips the save that writes it in
                    status="ready",
                    created=now,
                    modified=now,
                    priority=rng.choice([400, 500, 600, 900]),
                    processing_type=rng.choice(["simul", "evgen", "reco"]),
                    core_count=rng.choice([1, 8]),
                    ram_count=rng.choice([1000, 2000, 3000]),
                    cpu_time=rng.uniform(1, 50),
                    n_jobs=jobs_per_task,
                    n_events_per_job=100,
                    release=rng.choice(["", "Athena-24.0.30"]),
                    architecture="x86_64-el9-gcc13-opt",
                    architecture_spec={
                        "sw_platform": "x86_64-el9-gcc13-opt",
                        "base_platform": "",
                        "cpu_specs": [{"arch": "x86_64"}],
                        "gpu_spec": None,
                    },
                    nucleus=rng.choice(nuclei),
                )
                for i in range(n_tasks)
            ]
        )
        jobs = job_services.define_jobs(
            owner,
            [
                {"owner_group": group, "setup": setup, "cpu_time": 3600}
                for _ in range(n_tasks * jobs_per_task)
            ],
        )
        TaskJob.objects.bulk_create(
            [
                TaskJob(job=j, task=tasks[k // jobs_per_task], n_events=100)
                for k, j in enumerate(jobs)
            ],
            batch_size=5000,
        )
        return tasks

    return queues, make_tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument(
        "--db-statements", action="store_true", help="print the costliest statements to stderr"
    )
    args = parser.parse_args()
    n_tasks, n_queues, n_sites, n_nuclei, per_task, n_background = SCALES[args.scale]

    with throwaway_database("brokerage"):
        from django.db import connection

        from brokerage.models import BrokerageRun
        from brokerage.services.production import job_brokerage
        from core import gdpconfig

        rng = random.Random(2026)
        _queues, make_tasks = build_world(
            rng, n_tasks, n_queues, n_sites, n_nuclei, per_task, n_background
        )
        gdpconfig.set_value("JOB_BROKERAGE_MAX_TASKS", n_tasks)
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
        times, fractions, results = [], [], []
        for c in range(args.cycles):
            make_tasks(c)
            timer = DBTimer()
            t0 = time.perf_counter()
            with connection.execute_wrapper(timer):
                result = job_brokerage(rng=random.Random(c))
            elapsed = time.perf_counter() - t0
            times.append(elapsed)
            fractions.append(timer.seconds / elapsed)
            results.append(result)
            if args.db_statements:
                print(
                    json.dumps(
                        {
                            "cycle": c,
                            "db_s": round(timer.seconds, 3),
                            "queries": timer.queries,
                            "top": timer.top(),
                        }
                    ),
                    file=sys.stderr,
                )
            if result["tasks"] != n_tasks:
                raise SystemExit(f"cycle {c} brokered {result['tasks']} tasks, not {n_tasks}")
        median = statistics.median(times)
        i = times.index(median)
        candidates = sum(len(r.candidates) for r in BrokerageRun.objects.all()[:n_tasks])
        context = {
            "scale": args.scale,
            "tasks": n_tasks,
            "queues": n_queues,
            "cycles": args.cycles,
            "all_cycles_s": [round(t, 3) for t in times],
            "brokered": results[i]["brokered"],
            "pending": results[i]["pending"],
            "jobs_activated": results[i]["jobs"],
            "trace_candidates_per_cycle": candidates,
            "database": "postgresql",
        }
        emit("job_brokerage_cycle_s", median, "s", target_s=5.0, **context)
        emit("job_brokerage_db_fraction", fractions[i], "fraction", **context)


if __name__ == "__main__":
    main()
