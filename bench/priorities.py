"""Recompute every TaskQueue priority: 10,000 TaskQueues of 1,000 users.

    .venv/bin/python bench/priorities.py --scale small
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/priorities.py --scale full

Prints `priorities_10k_tq_s`: the median time of a full recompute (read the TaskQueues' loads
from the per-priority counts, run the engine with corrections, write every priority back), and
`priorities_engine_s`, the pure engine alone. In a throw-away database.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from _common import emit, throwaway_database

SCALES = {"small": (1_000, 100), "full": (10_000, 1_000)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n_tqs, n_users = SCALES[args.scale]

    with throwaway_database("priorities"):
        from core import gdpconfig
        from matcher.models import TaskQueue, TaskQueuePriorityCount
        from matcher.taskqueue_priorities import groups_map, recompute_priorities, taskqueue_loads
        from shares import priorities as engine
        from shares.models import GridGroup, User
        from simulation import demo

        demo.create_world()
        rng = random.Random(1)
        groups = list(GridGroup.objects.filter(generic_pilot=False))
        users = User.objects.bulk_create(
            User(username=f"u{i:04d}", dn=f"/CN=bench user {i}") for i in range(n_users)
        )
        for u in users:
            u.grid_groups.add(rng.choice(groups))
        member_group = {
            u: g for u, g in User.grid_groups.through.objects.values_list("user_id", "gridgroup_id")
        }
        now = time.time()
        from django.utils import timezone

        setup = gdpconfig.get("DefaultSetup")  # the grid's one Setup

        tqs = TaskQueue.objects.bulk_create(
            TaskQueue(
                key=f"bench-{i}",
                owner_id=(owner := users[i % n_users].pk),
                owner_group_id=member_group[owner],
                setup=setup,
                cpu_time=rng.choice([500, 5000, 50000, 300000]),
                created=timezone.now(),
            )
            for i in range(n_tqs)
        )
        TaskQueuePriorityCount.objects.bulk_create(
            TaskQueuePriorityCount(task_queue=tq, user_priority=p, jobs=rng.randint(1, 200))
            for tq in tqs
            for p in rng.sample(range(11), k=rng.randint(1, 3))
        )
        corrections = {(g.pk, None): rng.uniform(0.5, 2) for g in groups}
        context = {"taskqueues": n_tqs, "users": n_users, "scale": args.scale}
        context["db"] = "postgresql"

        full, pure = [], []
        loads, gm = taskqueue_loads(), groups_map()
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            engine.taskqueue_priorities(loads, gm, corrections)
            pure.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            result = recompute_priorities(corrections=corrections)
            full.append(time.perf_counter() - t0)
        if len(result) != n_tqs:
            raise SystemExit(f"recomputed {len(result)} TaskQueues, expected {n_tqs}")
        del now
        emit("priorities_10k_tq_s", statistics.median(full), "s", **context)
        emit("priorities_engine_s", statistics.median(pure), "s", **context)


if __name__ == "__main__":
    main()
