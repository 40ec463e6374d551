"""One timeouts cycle (every rule and fast rebrokerage) over 1,000,000 jobs.

    .venv/bin/python bench/timeouts.py --scale small
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/timeouts.py --scale full

The jobs are loaded with `matcher.bulk.load_jobs` (COPY on PostgreSQL), then one set-based
UPDATE gives them a realistic mix of states, ages, heartbeats and priorities: about 40 %
activated, 30 % running, a few % in each other state, a fifth of them task jobs at the six
demo queues (one paused, one with disableReassign, one with slots, one in test, one with its own
heartbeat timeout). Ages stay under each state's limit except for one job in 500 (one in 700 for
heartbeats), so a few thousand time out, and one gshare crowds one queue for fast rebrokerage.
Prints `timeout_cycle_1m_s` (target 5 s) with the cycle's counts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from _common import emit, throwaway_database

SCALES = {"small": 50_000, "full": 1_000_000}
N_TASKS = 50

# status by id % 100, with the state's limit in seconds (defaults of timeouts/params.py)
MIX = [
    (40, "activated", 48 * 3600),
    (70, "running", 21 * 86400),
    (74, "starting", 48 * 3600),
    (78, "sent", 1800),
    (82, "holding", None),  # 3 h at priority >= 800, else 48 h
    (88, "transferring", None),  # 2 days at priority >= 800, else 6 days
    (93, "defined", 4 * 3600),
    (96, "assigned", 12 * 3600),
    (98, "pending", 3600),
    (99, "throttled", 7 * 86400),
    (100, "finished", 86400),
]


class DBTimer:
    """A connection execute wrapper adding up the time per statement (--db-statements)."""

    def __init__(self):
        self.by_statement: dict[str, float] = {}

    def __call__(self, execute, sql, params, many, context):
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            head = sql[:100]
            self.by_statement[head] = self.by_statement.get(head, 0.0) + time.perf_counter() - t0

    def top(self, n=10) -> list:
        rows = sorted(self.by_statement.items(), key=lambda kv: -kv[1])[:n]
        return [[round(t, 3), sql] for sql, t in rows]


def mix_sql(sites: list[str]) -> str:
    from matcher.models import Job

    m = "(id % 100)"
    status = "CASE " + " ".join(f"WHEN {m} < {hi} THEN '{s}'" for hi, s, _ in MIX) + " END"
    high = "((id / 7) % 10 = 0)"
    # Who is where (id % 6), and CERN (0) gets few running jobs: its queue overflows.
    crowded = f"(id % 6 = 0 AND id % 4 <> 0 AND {m} >= 40 AND {m} < 70)"
    limits = {
        "holding": f"CASE WHEN {high} THEN 10800 ELSE 172800 END",
        "transferring": f"CASE WHEN {high} THEN 172800 ELSE 518400 END",
    }
    limit = (
        f"CASE WHEN {crowded} THEN 172800 "
        + " ".join(f"WHEN {m} < {hi} THEN {lim or limits[s]}" for hi, s, lim in MIX)
        + " END"
    )
    status = f"CASE WHEN {crowded} THEN 'activated' ELSE {status} END"
    frac = "(CASE WHEN (id / 100) % 500 = 0 THEN 1.05 ELSE ((id * 37) % 1000) / 1111.0 END)"
    hb_frac = "(CASE WHEN (id / 100) % 700 = 1 THEN 1.05 ELSE ((id * 13) % 1000) / 1111.0 END)"
    site = "CASE id % 6 " + " ".join(f"WHEN {i} THEN '{s}'" for i, s in enumerate(sites)) + " END"
    matched = f"({m} >= 40 AND {m} < 88 AND NOT {crowded})"

    def ago(seconds_expr: str) -> str:
        return f"(%(now)s::timestamptz - make_interval(secs => {seconds_expr}))"

    sql = (
        f"UPDATE {Job._meta.db_table} SET status = {status}, "
        f"current_priority = CASE WHEN {high} THEN 900 ELSE 500 END, "
        f"site = CASE WHEN {matched} THEN {site} ELSE '' END, "
        f"status_changed = {ago(f'{frac} * ({limit})')}, "
        f"heartbeat = CASE WHEN {matched} THEN {ago(f'{hb_frac} * 7200')} ELSE NULL END, "
        f"sub_status = CASE WHEN id % 3 = 0 THEN 'stageout' ELSE '' END"
    )
    return sql.replace(" % ", " %% ")  # executed with parameters: a literal % is doubled


def build(n: int) -> dict:
    from django.db import connection

    from brokerage.models import PandaQueue, Task, TaskJob
    from brokerage.topology_import import import_topology
    from core import clock, gdpconfig
    from matcher import bulk
    from matcher.models import Job, TaskQueueJob, TaskQueuePriorityCount
    from shares.models import GridGroup, User
    from simulation import demo, panda_demo

    demo.create_world()
    import_topology(panda_demo.topology())
    now = clock.now()
    queues = list(PandaQueue.objects.select_related("site").order_by("name"))
    PandaQueue.objects.update(last_start=now, last_pilot=now)
    by_name = {q.name: q for q in queues}
    by_name["RAL-LCG2_SCORE"].status = "paused"
    by_name["IN2P3-CC_SCORE"].catchall = "disableReassign"
    by_name["INFN-T1_GPU"].num_slots = 100
    by_name["FZK-LCG2_MCORE"].status = "test"
    by_name["PIC_MCORE"].workflow = "pull_ups"
    PandaQueue.objects.bulk_update(queues, ["status", "catchall", "num_slots", "workflow"])
    gdpconfig.set_value("HEARTBEAT_TIMEOUT_pull_ups", 3.0)
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQUEUE_Express", 100)
    # CERN first: its queue is the crowded one.
    queues.sort(key=lambda q: (q.name != "CERN-PROD_MCORE", q.name))
    sites = [q.site.name for q in queues]

    t0 = time.perf_counter()
    bulk.load_jobs(n, seed=3)
    loaded = time.perf_counter() - t0
    owner = User.objects.get(username="erin")
    group = GridGroup.objects.get(name="lhcb_mc")
    tasks = Task.objects.bulk_create(
        [
            Task(
                name=f"bench.t{i}",
                owner=owner,
                owner_group=group,
                status="running",
                created=now,
                modified=now,
                priority=900 if i % 10 == 0 else 500,
                gshare="Express" if i == 0 else ("MC" if i % 2 else "Data"),
            )
            for i in range(N_TASKS)
        ]
    )
    express, others = tasks[0].pk, [t.pk for t in tasks[1:]]
    t0 = time.perf_counter()
    tj, job = TaskJob._meta.db_table, Job._meta.db_table
    queue_case = (
        "CASE id % 6 " + " ".join(f"WHEN {i} THEN {q.pk}" for i, q in enumerate(queues)) + " END"
    )
    task_case = (
        f"CASE WHEN id % 6 = 0 AND id % 50 = 0 THEN {express} ELSE "
        f"CASE id % {len(others)} "
        + " ".join(f"WHEN {i} THEN {pk}" for i, pk in enumerate(others))
        + " END END"
    )
    member, counts = TaskQueueJob._meta.db_table, TaskQueuePriorityCount._meta.db_table
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {tj} (job_id, task_id, queue_id, n_events, input_files, input_size_mb) "
            f"SELECT id, {task_case}, {queue_case}, 100, 1, 0 FROM {job} WHERE id % 5 = 0"
        )
        cur.execute(mix_sql(sites), {"now": now})
        cur.execute(
            f"DELETE FROM {member} WHERE job_id IN "
            f"(SELECT id FROM {job} WHERE status <> 'activated')"
        )
        cur.execute(f"DELETE FROM {counts}")
        cur.execute(
            f"INSERT INTO {counts} (task_queue_id, user_priority, jobs) "
            f"SELECT task_queue_id, user_priority, COUNT(*) FROM {member} "
            "GROUP BY task_queue_id, user_priority"
        )
    with connection.cursor() as cur:
        cur.execute(f"VACUUM ANALYZE {job}, {tj}, {member}, {counts}")
    return {"load_s": round(loaded, 1), "mix_s": round(time.perf_counter() - t0, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--jobs", type=int, help="override the number of jobs of the scale")
    parser.add_argument(
        "--db-statements", action="store_true", help="print the costliest statements to stderr"
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the cycle to stderr")
    args = parser.parse_args()
    n = args.jobs if args.jobs is not None else SCALES[args.scale]

    with throwaway_database("timeouts"):
        from django.db import connection

        from matcher.models import Job
        from timeouts.services import timeouts_cycle

        setup = build(n)
        print(json.dumps({"setup": setup, "jobs": n}), file=sys.stderr)
        timer = DBTimer()
        t0 = time.perf_counter()
        with connection.execute_wrapper(timer):
            if args.profile:
                import cProfile
                import pstats

                with cProfile.Profile() as prof:
                    counts = timeouts_cycle()
            else:
                counts = timeouts_cycle()
        elapsed = time.perf_counter() - t0
        if args.profile:
            pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(35)
        if args.db_statements:
            print(json.dumps({"top": timer.top()}, indent=1), file=sys.stderr)
        t0 = time.perf_counter()
        again = timeouts_cycle()
        second = time.perf_counter() - t0
        # The defined timeout retries a task job's work as a new job (brokerage.lifecycle).
        if Job.objects.count() != n + counts.get("retried", 0) + again.get("retried", 0):
            raise SystemExit("jobs went missing")
        if counts["acted"] < 1000 and n >= 1_000_000:
            raise SystemExit(f"only {counts['acted']} jobs timed out: the mix is wrong")
        emit(
            "timeout_cycle_1m_s",
            elapsed,
            "s",
            target_s=5.0,
            scale=args.scale,
            jobs=n,
            database="postgresql",
            counts=counts,
            second_cycle_s=round(second, 3),
            second_cycle_acted=again["acted"],
        )


if __name__ == "__main__":
    main()
