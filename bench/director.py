"""One pilot-director cycle over 5,000 TaskQueues and 1,000,000 waiting jobs.

    .venv/bin/python bench/director.py --scale small
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/director.py --scale full

Prints `director_cycle_s` (the median of a few cycles, the first one, which submits the most
pilots, in the context) in a throw-away database.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from _common import emit, throwaway_database

SCALES = {"small": (40_000, 250), "full": (1_000_000, 1_250)}  # jobs, templates (x4 TQs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--cycles", type=int, default=3)
    args = parser.parse_args()
    n_jobs, n_templates = SCALES[args.scale]

    with throwaway_database("director"):
        from core.cycles import run_cycle
        from matcher import bulk
        from matcher.models import TaskQueue
        from matcher.taskqueue_priorities import recompute_priorities
        from pilots.models import Pilot
        from simulation import demo

        demo.create_world()
        templates = bulk.make_templates(random.Random(1), n_templates)
        for i, t in enumerate(templates):
            # Distinct templates, hence exactly 4 TaskQueues each (GridMiddlewares restrict
            # nothing the director or the matcher reads).
            t.requirements["grid_middlewares"] = [f"bench-{i}"]
            t.top_segment = None  # jobs in every CPU segment, runnable or not
        bulk.load_jobs(n_jobs, seed=1, templates=templates)
        recompute_priorities()
        n_tqs = TaskQueue.objects.count()
        times, pilots = [], []
        for _ in range(args.cycles):
            before = Pilot.objects.count()
            t0 = time.perf_counter()
            run = run_cycle("director")
            times.append(time.perf_counter() - t0)
            if run.status != "success":
                raise SystemExit(f"director cycle {run.status}: {run.error}")
            pilots.append(Pilot.objects.count() - before)
        emit(
            "director_cycle_s",
            statistics.median(times),
            "s",
            first_cycle_s=round(times[0], 3),
            pilots_per_cycle=pilots,
            taskqueues=n_tqs,
            jobs=n_jobs,
            scale=args.scale,
            db="postgresql",
        )


if __name__ == "__main__":
    main()
