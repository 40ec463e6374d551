"""One task-completion cycle (JEDI's PostProcessor) over 10,000 open tasks of 100 jobs each.

    .venv/bin/python bench/tasks.py --scale small
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/tasks.py --scale full

The jobs are loaded with `matcher.bulk.load_jobs` (COPY on PostgreSQL) and shared out among the
tasks; one set-based UPDATE ends most of them: every job of one task in ten has ended (finished,
or failed for one job in twenty), every other task keeps one open job somewhere among its
jobs, so the cycle must look at them all to find the tasks that end. Prints
`task_completion_cycle_s` with the tasks it ended, and the same for a second cycle (nothing left
to end: the cost of a quiet minute).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from _common import emit, throwaway_database

SCALES = {"small": (500, 100), "full": (10_000, 100)}  # tasks, jobs per task


def build(n_tasks: int, per_task: int) -> dict:
    from django.db import connection

    from brokerage.models import Task, TaskJob
    from core import clock
    from matcher import bulk
    from matcher.models import Job
    from shares.models import GridGroup, User
    from simulation import demo

    demo.create_world()
    now = clock.now()
    t0 = time.perf_counter()
    bulk.load_jobs(n_tasks * per_task, seed=5)
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
                n_jobs=per_task,
            )
            for i in range(n_tasks)
        ],
        batch_size=2000,
    )
    first = tasks[0].pk
    t0 = time.perf_counter()
    tj, job = TaskJob._meta.db_table, Job._meta.db_table
    with connection.cursor() as cur:
        cur.execute(f"SELECT MIN(id) FROM {job}")
        base = cur.fetchone()[0]
        # Job k of the load belongs to task k // per_task; the k % per_task-th job of a task
        # is its open one (at a position that varies with the task), except in every tenth task.
        k = f"(id - {base})"
        task_of = f"({first} + {k} / {per_task})"
        slot = f"({k} % {per_task})"
        open_slot = f"(({k} / {per_task}) * 37 % {per_task})"
        ended = f"(({k} / {per_task}) % 10 = 0 OR {slot} <> {open_slot})"
        cur.execute(
            f"INSERT INTO {tj} (job_id, task_id, n_events, input_files, input_size_mb, "
            f"attempt, reassigned) SELECT id, {task_of}, 100, 1, 0, 1, FALSE FROM {job}"
        )
        cur.execute(
            f"UPDATE {job} SET status = CASE WHEN {ended} THEN "
            f"CASE WHEN id % 20 = 0 THEN 'failed' ELSE 'finished' END ELSE 'running' END"
        )
    with connection.cursor() as cur:
        cur.execute(f"VACUUM ANALYZE {job}, {tj}, {Task._meta.db_table}")
    return {"load_s": round(loaded, 1), "mix_s": round(time.perf_counter() - t0, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    args = parser.parse_args()
    n_tasks, per_task = SCALES[args.scale]

    with throwaway_database("tasks"):
        from brokerage.lifecycle import task_completion
        from brokerage.models import Task

        setup = build(n_tasks, per_task)
        print(json.dumps({"setup": setup, "tasks": n_tasks}), file=sys.stderr)
        t0 = time.perf_counter()
        counts = task_completion()
        elapsed = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = task_completion()
        second = time.perf_counter() - t0
        expected = (n_tasks + 9) // 10
        if counts["tasks"] != expected or Task.objects.filter(status="running").count() != (
            n_tasks - expected
        ):
            raise SystemExit(f"{counts} ended, {expected} expected")
        emit(
            "task_completion_cycle_s",
            elapsed,
            "s",
            scale=args.scale,
            tasks=n_tasks,
            jobs=n_tasks * per_task,
            database="postgresql",
            counts=counts,
            second_cycle_s=round(second, 3),
            second_cycle_tasks=again["tasks"],
        )


if __name__ == "__main__":
    main()
