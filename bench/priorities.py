"""The priorities of every TaskQueue: a full recompute at 10,000 TaskQueues, and the
priorities cycle, warm and incremental, at 50,000.

    .venv/bin/python bench/priorities.py --scale small
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/priorities.py --scale full

Prints, in a throw-away database:

- `priorities_10k_tq_s`: the median time of a full recompute (recompute_priorities: read the
  TaskQueues' loads from the per-priority counts, run the engine with corrections, store every
  priority that differs), and `priorities_engine_s`, the pure engine alone;
- `priorities_50k_tq_s` (target 1 s): the median of the priorities cycle (the `priorities`
  cycle's body: marks, loads, correctors, the incremental engine, the writes, the change log's
  trim) warm at 50,000 TaskQueues, each run after a round of changes: 1% of the TaskQueues
  gain or lose jobs (a tenth of those emptied), 0.1% created and 0.1% dropped, and every third
  round one group's JobShare edited; `priorities_50k_quiet_s`, a run after no change (writes
  nothing); `priorities_50k_all_changed_s`, a run after every group's JobShare changed (every
  priority recomputed and written); `priorities_50k_full_s`, a run of a process that starts
  afresh (everything recomputed, the differences written: the cycle as it was before it kept
  its inputs). `--tqs` sets the number of TaskQueues of these figures.

The grid of the 50,000: 5,000 users, nine in ten of them in the group that is not JobSharing
(analysis users: most TaskQueues), the others in the three JobSharing production groups; 1 to
3 distinct UserPriorities per TaskQueue.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from _common import emit, throwaway_database

SCALES = {"small": (1_000, 100, 5_000), "full": (10_000, 1_000, 50_000)}


def populate(n_tqs: int, n_users: int, rng: random.Random, prefix: str, weights=None):
    from django.utils import timezone

    from core import gdpconfig
    from matcher.models import TaskQueue, TaskQueuePriorityCount
    from shares.models import GridGroup, User

    groups = list(GridGroup.objects.filter(generic_pilot=False).order_by("pk"))
    users = User.objects.bulk_create(
        User(username=f"{prefix}{i:05d}", dn=f"/CN=bench user {prefix}{i}") for i in range(n_users)
    )
    through = User.grid_groups.through
    member_group = {}
    for u in users:
        g = rng.choices(groups, weights=weights(groups) if weights else None)[0]
        member_group[u.pk] = g.pk
    through.objects.bulk_create(through(user_id=u, gridgroup_id=g) for u, g in member_group.items())
    setup = gdpconfig.get("DefaultSetup")  # the grid's one Setup
    now = timezone.now()
    tqs = TaskQueue.objects.bulk_create(
        TaskQueue(
            key=f"{prefix}-{i}",
            owner_id=(owner := users[i % n_users].pk),
            owner_group_id=member_group[owner],
            setup=setup,
            cpu_time=rng.choice([500, 5000, 50000, 300000]),
            created=now,
        )
        for i in range(n_tqs)
    )
    TaskQueuePriorityCount.objects.bulk_create(
        TaskQueuePriorityCount(task_queue=tq, user_priority=p, jobs=rng.randint(1, 200))
        for tq in tqs
        for p in rng.sample(range(11), k=rng.randint(1, 3))
    )
    return groups, users, member_group


def full_recompute(n_tqs: int, n_users: int, scale: str, repeat: int) -> None:
    from matcher.taskqueue_priorities import groups_map, recompute_priorities, taskqueue_loads
    from shares import priorities as engine

    rng = random.Random(1)
    groups, _, _ = populate(n_tqs, n_users, rng, "u")
    corrections = {(g.pk, None): rng.uniform(0.5, 2) for g in groups}
    context = {"taskqueues": n_tqs, "users": n_users, "scale": scale, "db": "postgresql"}
    full, pure = [], []
    loads, gm = taskqueue_loads(), groups_map()
    for _ in range(repeat):
        t0 = time.perf_counter()
        engine.taskqueue_priorities(loads, gm, corrections)
        pure.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = recompute_priorities(corrections=corrections)
        full.append(time.perf_counter() - t0)
    if len(result) != n_tqs:
        raise SystemExit(f"recomputed {len(result)} TaskQueues, expected {n_tqs}")
    emit("priorities_10k_tq_s", statistics.median(full), "s", **context)
    emit("priorities_engine_s", statistics.median(pure), "s", **context)


class Churn:
    """Rounds of changes to the inputs, written straight into the tables (not through the job
    services, whose own recomputations would do part of the cycle's work)."""

    def __init__(self, rng: random.Random, groups, users, member_group):
        self.rng, self.groups, self.users, self.member_group = rng, groups, users, member_group
        self.created = 0

    def round(self, n_tqs: int, share_edit: bool) -> None:
        from django.db import connection
        from django.utils import timezone

        from core import gdpconfig
        from matcher.models import TaskQueue, TaskQueuePriorityCount
        from shares.models import GridGroup

        rng = self.rng
        counts = TaskQueuePriorityCount._meta.db_table
        with connection.cursor() as cur:
            cur.execute(f"SELECT id FROM {TaskQueue._meta.db_table}")
            ids = [r[0] for r in cur.fetchall()]
            moved = rng.sample(ids, k=max(1, n_tqs // 100))
            jobs = [0 if rng.random() < 0.1 else rng.randint(1, 200) for _ in moved]
            cur.execute(
                f"UPDATE {counts} c SET jobs = v.n FROM unnest(%s::bigint[], %s::int[]) "
                "AS v(tq, n) WHERE c.task_queue_id = v.tq",
                [moved, jobs],
            )
            dropped = rng.sample([t for t in ids if t not in set(moved)], k=max(1, n_tqs // 1000))
            cur.execute(f"DELETE FROM {counts} WHERE task_queue_id = ANY(%s)", [dropped])
            cur.execute(f"DELETE FROM {TaskQueue._meta.db_table} WHERE id = ANY(%s)", [dropped])
        setup, now = gdpconfig.get("DefaultSetup"), timezone.now()
        new = []
        for _ in range(max(1, n_tqs // 1000)):
            owner = rng.choice(self.users).pk
            self.created += 1
            new.append(
                TaskQueue(
                    key=f"new-{id(self)}-{self.created}",
                    owner_id=owner,
                    owner_group_id=self.member_group[owner],
                    setup=setup,
                    cpu_time=500,
                    created=now,
                )
            )
        TaskQueue.objects.bulk_create(new)
        TaskQueuePriorityCount.objects.bulk_create(
            TaskQueuePriorityCount(task_queue=tq, user_priority=rng.randint(0, 10), jobs=3)
            for tq in new
        )
        if share_edit:
            g = rng.choice(self.groups)
            GridGroup.objects.filter(pk=g.pk).update(job_share=rng.choice([100, 300, 5000, 40000]))


def cycle_at_scale(n_tqs: int, scale: str, repeat: int, fillfactor: int | None) -> None:
    from matcher import taskqueue_priorities
    from shares.models import GridGroup

    n_users = max(10, n_tqs // 10)
    rng = random.Random(2)

    def weights(groups):  # nine users in ten in the group that is not JobSharing
        shared = sum(g.job_sharing for g in groups) or 1
        return [0.1 / shared if g.job_sharing else 0.9 for g in groups]

    groups, users, member_group = populate(n_tqs, n_users, rng, "w", weights)
    context = {"taskqueues": n_tqs, "users": n_users, "scale": scale, "db": "postgresql"}
    churn = Churn(rng, groups, users, member_group)
    run = taskqueue_priorities.priorities_cycle

    def timed() -> tuple[float, dict]:
        t0 = time.perf_counter()
        figures = run()
        return time.perf_counter() - t0, figures

    taskqueue_priorities._state.reset()
    timed()  # the first run: everything computed and written
    warm, runs = [], []
    for i in range(repeat):
        churn.round(n_tqs, share_edit=i % 3 == 2)
        seconds, figures = timed()
        warm.append(seconds)
        runs.append(figures)

    def median_of(key):
        return statistics.median(f[key] for f in runs)

    quiet, quiet_figures = timed()
    if quiet_figures["written"]:
        raise SystemExit(f"a run after no change wrote {quiet_figures['written']} priorities")
    for g in GridGroup.objects.filter(pk__in=[g.pk for g in groups]):
        GridGroup.objects.filter(pk=g.pk).update(job_share=g.job_share * 1.5 + 1)
    all_changed, all_figures = timed()
    fulls = []
    for _ in range(max(1, repeat // 2)):
        churn.round(n_tqs, share_edit=False)
        taskqueue_priorities._state.reset()  # a process starting afresh
        fulls.append(timed()[0])
    emit(
        "priorities_50k_tq_s",
        statistics.median(warm),
        "s",
        target=1.0,
        runs=repeat,
        fillfactor=fillfactor,
        changes="1% of TQs' jobs, 0.1% TQs created, 0.1% dropped, a JobShare every 3rd run",
        recomputed_median=median_of("recomputed"),
        written_median=median_of("written"),
        read_s_median=median_of("read_seconds"),
        compute_s_median=median_of("compute_seconds"),
        write_s_median=median_of("write_seconds"),
        **context,
    )
    emit("priorities_50k_quiet_s", quiet, "s", written=quiet_figures["written"], **context)
    emit(
        "priorities_50k_all_changed_s",
        all_changed,
        "s",
        written=all_figures["written"],
        recomputed=all_figures["recomputed"],
        **context,
    )
    emit("priorities_50k_full_s", statistics.median(fulls), "s", runs=len(fulls), **context)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tqs", type=int, help="TaskQueues of the cycle's figures")
    parser.add_argument("--only", choices=["full", "cycle"], help="one of the two parts")
    parser.add_argument(
        "--fillfactor",
        type=int,
        help="the TaskQueue table's fillfactor in the throw-away database (room on each page "
        "for a priority's new row version beside the old: an update that touches no index)",
    )
    args = parser.parse_args()
    n_tqs, n_users, n_cycle = SCALES[args.scale]

    with throwaway_database("priorities"):
        from simulation import demo

        if args.fillfactor:
            from django.db import connection

            from matcher.models import TaskQueue

            with connection.cursor() as cur:
                cur.execute(
                    f"ALTER TABLE {TaskQueue._meta.db_table} SET (fillfactor = %s)"
                    % int(args.fillfactor)
                )
        demo.create_world()
        if args.only != "cycle":
            full_recompute(n_tqs, n_users, args.scale, args.repeat)
        if args.only != "full":
            from django.db import connection

            from matcher.models import TaskQueue, TaskQueuePriorityCount

            with connection.cursor() as cur:  # the cycle's grid alone
                cur.execute(f"DELETE FROM {TaskQueuePriorityCount._meta.db_table}")
                cur.execute(f"DELETE FROM {TaskQueue._meta.db_table}")
            cycle_at_scale(args.tqs or n_cycle, args.scale, max(args.repeat, 7), args.fillfactor)


if __name__ == "__main__":
    main()
