"""`make run`'s demo grid for a simulated day, headless: does its work flow?

    .venv/bin/python bench/demo_health.py                  # 24 simulated hours (--scale full)
    .venv/bin/python bench/demo_health.py --scale small    # 3 simulated hours
    .venv/bin/python bench/demo_health.py --hours 12 --param SimAnalysisTasksPerHour=4

The demo world as `make run` loads it (`manage.py demo`: 3,000 waiting jobs and a first director
cycle; `manage.py brokerage_demo`: the PanDA topology and its first tasks, brokered once) on a
throw-away database, then the simulator's ticks (`simulation_tick`: arrivals, every cycle due,
heartbeats, silent pilots) of --step-minutes on the shared simulated clock, which this script
pauses and moves, in this process and as fast as it goes. Every --every-hours one `sample` line:
the PanDA tasks by kind and state, the tasks' jobs and all jobs by state, the timeout actions so
far by rule. At the end:
- `tasks_done_fraction` per kind: the tasks submitted in the run's first half that are `done`
  (a task's jobs all finished) at its end, with the counts by state;
- `defined_jobs_growth`: the jobs in `defined` at the end less those at the run's half-way
  sample (the brokerage keeps up: not above zero by more than a tick's arrivals);
- `timeout_actions_fraction`: the timeout actions over the jobs that existed in the run, with
  the `defined` rule's reassignments apart (the rules exist for stragglers, not for most jobs);
- `probe_wait_minutes`: how long a job submitted at several times waited to start running, for a
  user of the demo's DIRAC arrivals (alice, whose own backlog it joins) and for one of its PanDA
  users (carol, who has none). Jobs with an executable (payloads) run only on the local worker
  node's real pilots, which `make run` starts and this in-process run does not: their wait is
  not measured here; the probes are plain jobs of the simulated CEs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections import Counter
from datetime import timedelta

os.environ["GRIDWMS_SIMULATED_CLOCK"] = "1"  # before the settings are read

from _common import emit, throwaway_database

SCALES = {"small": 3.0, "full": 24.0}
PROBE_USERS = ("alice", "carol")


def counts(qs, *fields) -> dict:
    from django.db.models import Count

    rows = qs.values_list(*fields).annotate(n=Count("pk")).order_by()
    return {":".join(str(v) for v in row[:-1]): row[-1] for row in rows}


def sample(hour: float) -> dict:
    from brokerage.models import Task, TaskJob
    from matcher.models import Job
    from timeouts.models import TimeoutAction

    line = {
        "kind": "sample",
        "hour": hour,
        "tasks": counts(Task.objects, "kind", "status"),
        "task_jobs": counts(TaskJob.objects, "job__status"),
        "jobs": counts(Job.objects, "status"),
        "timeout_actions": counts(TimeoutAction.objects, "rule"),
    }
    print(json.dumps(line), flush=True)
    return line


def submit_probes(hour: float) -> list[tuple[float, str, int]]:
    """A plain job of 600 s CPU time for each probe user, now: (hour, user, job id)."""
    from core import gdpconfig
    from matcher import services as job_services
    from shares.models import User

    out = []
    for name in PROBE_USERS:
        user = User.objects.get(username=name)
        group = user.grid_groups.filter(generic_pilot=False).order_by("-job_share").first()
        spec = {
            "owner_group": group,
            "setup": gdpconfig.get("DefaultSetup"),
            "cpu_time": 600,
            "name": f"probe.{name}.{hour:g}h",
        }
        [job] = job_services.submit_jobs(user, [spec])
        out.append((hour, name, job.pk))
    return out


def probe_waits(probes, end) -> list[dict]:
    """Minutes from each probe's submission to its first move into running, or to the end of
    the run for one that never ran (`ran` false)."""
    from matcher.models import Job, JobStatusHistory

    out = []
    for hour, user, job_id in probes:
        job = Job.objects.get(pk=job_id)
        ran = (
            JobStatusHistory.objects.filter(job_id=job_id, to_status="running")
            .order_by("at")
            .values_list("at", flat=True)
            .first()
        )
        end_or_run = ran or end
        out.append(
            {
                "submitted_hour": hour,
                "user": user,
                # Not yet running at the end: how long it had waited by then.
                "wait_minutes": round((end_or_run - job.created).total_seconds() / 60, 1),
                "ran": ran is not None,
                "status": job.status,
            }
        )
    return out


def load_demo() -> None:
    from django.core.management import call_command

    with open(os.devnull, "w") as quiet:
        call_command("demo", stdout=quiet, stderr=quiet)
        call_command("brokerage_demo", stdout=quiet, stderr=quiet)


def summary(args, lines, probes, start, wall0) -> None:
    from brokerage.models import Task, TaskJob
    from core import clock
    from matcher.models import Job, JobStatusHistory
    from timeouts.models import TimeoutAction

    context = {"hours": args.hours, "step_minutes": args.step_minutes, "params": args.param}
    half = start + timedelta(hours=args.hours / 2)
    for kind in ("production", "analysis"):
        early = Task.objects.filter(kind=kind, created__lte=half)
        by_state = Counter(early.values_list("status", flat=True))
        n = sum(by_state.values())
        ended = sum(by_state.get(s, 0) for s in ("done", "finished", "failed"))
        emit(
            "tasks_done_fraction",
            by_state.get("done", 0) / n if n else 0.0,
            "fraction",
            task_kind=kind,
            submitted_in_first_half=n,
            # finished: every job ended, some failed (the simulated CEs fail 5 % of jobs).
            ended_fraction=round(ended / n, 3) if n else 0.0,
            by_state=dict(by_state),
            all_tasks=counts(Task.objects.filter(kind=kind), "owner__username", "status"),
            **context,
        )
    middle = min(lines, key=lambda x: abs(x["hour"] - args.hours / 2))
    emit(
        "defined_jobs_growth",
        lines[-1]["jobs"].get("defined", 0) - middle["jobs"].get("defined", 0),
        "jobs",
        defined_over_time={x["hour"]: x["jobs"].get("defined", 0) for x in lines},
        **context,
    )
    jobs = Job.objects.count()  # every job of the run: those waiting at its start and since
    defined_ever = JobStatusHistory.objects.filter(to_status="defined").count()
    task_jobs = TaskJob.objects.count()
    actions = Counter(TimeoutAction.objects.values_list("rule", flat=True))
    total = sum(actions.values())
    emit(
        "timeout_actions_fraction",
        total / jobs if jobs else 0.0,
        "actions per job",
        actions=total,
        jobs=jobs,
        defined_reassignments=actions.get("defined", 0),
        task_jobs=task_jobs,
        defined_reassignments_per_defined_job=round(actions.get("defined", 0) / defined_ever, 4)
        if defined_ever
        else 0.0,
        by_rule=dict(actions),
        **context,
    )
    for row in probe_waits(probes, clock.now()):
        emit("probe_wait_minutes", row.pop("wait_minutes"), "min", **row, **context)
    emit("wall_seconds", time.perf_counter() - wall0, "s", **context)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="full")
    parser.add_argument("--hours", type=float, default=None, help="overrides --scale")
    parser.add_argument("--step-minutes", type=float, default=2.0)
    parser.add_argument("--every-hours", type=float, default=2.0)
    parser.add_argument("--probe-every-hours", type=float, default=4.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--param", action="append", default=[], help="NAME=JSON (gdpconfig)")
    args = parser.parse_args()
    args.hours = args.hours if args.hours is not None else SCALES[args.scale]

    with throwaway_database("demo_health"):
        from django.conf import settings

        from core import clock, gdpconfig
        from core.models import SimulationClock
        from simulation import services as simulation

        settings.HOUSEKEEPING_IN_BACKGROUND = False  # recomputations inline: repeatable
        now0 = clock.now()
        SimulationClock.objects.update_or_create(
            pk=1, defaults={"running": False, "speed": 1.0, "anchor_real": now0, "anchor_sim": now0}
        )
        clock.invalidate()
        load_demo()
        for item in args.param:
            name, _, value = item.partition("=")
            gdpconfig.set_value(name, json.loads(value))
        rng = random.Random(args.seed)
        wall0 = time.perf_counter()
        start = clock.now()
        steps = round(args.hours * 60 / args.step_minutes)
        every = max(1, round(args.every_hours * 60 / args.step_minutes))
        probe_every = max(1, round(args.probe_every_hours * 60 / args.step_minutes))
        lines = [sample(0.0)]
        probes = submit_probes(0.0)
        for i in range(1, steps + 1):
            row = SimulationClock.objects.get(pk=1)
            row.anchor_sim += timedelta(minutes=args.step_minutes)
            row.save(update_fields=["anchor_sim"])
            clock.invalidate()
            simulation.simulation_tick(rng=rng, minutes=args.step_minutes)
            hour = round(i * args.step_minutes / 60, 2)
            if i % every == 0 or i == steps:
                lines.append(sample(hour))
            if i % probe_every == 0 and i < steps:
                probes += submit_probes(hour)
        summary(args, lines, probes, start, wall0)


if __name__ == "__main__":
    main()
