"""Fair share end to end: a headless simulated grid on the shared clock, its achieved shares.

    .venv/bin/python bench/fairshare.py --scale small
    .venv/bin/python bench/fairshare.py --scale full --chart /tmp/fairshare.html

A throw-away database; no web server, no cluster. The demo's groups (JobShares lhcb_user 10000,
not JobSharing; lhcb_mc 300 and lhcb_data 40000, JobSharing), five users in lhcb_user, the
demo's CEs (full: 6 sites, 7 CEs, 2,000 job slots; small: 4 sites, 5 CEs, 200 slots) and a job
mix over the four CPU segments with site and platform restrictions. The simulated clock
(core.clock, paused, moved by this script) advances in steps of --step-minutes; at each step
the waiting work is topped up per entity (each keeps more servable waiting jobs than its share
of the slots), then the real cycles run when due on their schedules (core/schedules.py, at
the step's granularity): pilot_status (the simulated CEs: pilots start, match a job through the
dispatcher, run it for CPUTime x CPUScale, ask again), usage_sampling, priorities (the
WMSHistory corrector, then every TaskQueue priority), taskqueue_cleanup, director (private and
generic pilots). Not run: brokerage, ClassAds, timeouts, retention, notifications (no tasks, no
heartbeats: nothing for them here).

Job slots: the simulated CE starts a scheduled pilot only on a free slot of its CE
(ComputingElement.max_running_pilots, enforced by simulation.simulated_ce.simulated_ce_cycle); this
script also holds them before each pilot_status cycle (their next event moves to the next
step). Queued pilots still count against max_waiting_pilots.

`--param NAME=JSON` sets a gdpconfig parameter (e.g. MatchCPUSegmentPrecedence=true). The
matcher's view and gdpconfig refresh once a real second or two (TASKQUEUE_VIEW_REFRESH_SECONDS,
GDPCONFIG_REFRESH_SECONDS: many simulated minutes here), so runs are not exactly repeatable
unless both are set to 0 in the environment.

Achieved share = running-slot-time share, as DIRAC's WMSHistory measures it (the running jobs
of each entity, sampled at every step, time-weighted, over the entities); the CPU time delivered
(CPUTime of the jobs finished that day) is printed beside it.

JSON lines (`kind`): `entity` (per entity: expected share, achieved per simulated day, CPU
share per day), `summary` (max_share_gap_pp over the entities whose servable waiting work
exceeded their share of the slots all through the last day, wasted_pilot_fraction = pilots that
ran and found no job / pilots that ran, wall time), `diagnosis` (unservable waiting jobs and why,
the director's decisions per entity and CPU segment, pilots that found no job per group and
kind, by their TaskQueue's waiting jobs when sent and by the minutes they queued at their CE,
jobs started per CPU segment and pilot kind, the corrector's factors and clamps: written by
bench/fairshare_diagnosis.py). The chart (plotly, its JS inline) goes to --chart.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter, defaultdict
from datetime import timedelta
from types import SimpleNamespace

os.environ["GRIDWMS_SIMULATED_CLOCK"] = "1"  # before the settings are read

from _common import throwaway_database
from fairshare_diagnosis import diagnose, write_chart

WAITING_PILOTS_PER_CE = 50
SCALES = {
    # sites kept, slots per CE, simulated days
    "small": {"sites": ["LCG.CERN.ch", "LCG.PIC.es", "LCG.RAL.uk", "LCG.GRIDKA.de"], "days": 0.5},
    "full": {"sites": None, "days": 3.0},
}
SLOTS = {"small": 200, "full": 2000}

# CPU time (s) of the jobs per CPU segment (CPUSegments 500 / 5000 / 50000 / 300000); the last
# one holds 100,000 s and 200,000 s jobs (the "100,000 s in the 300,000 s segment").
SEGMENT_CPU = {500: [400], 5000: [4000], 50000: [40000], 300000: [100000, 200000]}
# Per entity kind: the share of its jobs in each segment (500, 5000, 50000, 300000).
MIX = {
    "lhcb_data": [0.10, 0.20, 0.30, 0.40],
    "lhcb_mc": [0.10, 0.30, 0.50, 0.10],
    "lhcb_user": [0.40, 0.30, 0.20, 0.10],
}
# Restrictions: (probability, requirements). Site lists name demo sites; platforms as the CEs.
RESTRICTIONS = [
    (0.55, {}),
    (0.10, {"platforms": ["x86_64-el9"]}),
    (0.08, {"platforms": ["x86_64-centos7"]}),
    (0.03, {"platforms": ["aarch64-el9"]}),
    (0.08, {"sites": ["LCG.CERN.ch"]}),
    (0.06, {"sites": ["LCG.RAL.uk", "LCG.PIC.es"]}),
    (0.04, {"sites": ["LCG.CNAF.it", "LCG.IN2P3.fr"]}),
    (0.03, {"sites": ["LCG.GRIDKA.de"], "platforms": ["aarch64-el9"]}),
    (0.03, {"banned_sites": ["LCG.CERN.ch"]}),
]
LHCB_USERS = ["alice", "bob", "carol", "frank", "grace"]
SUBMITTERS = {"lhcb_data": ["dave"], "lhcb_mc": ["erin", "carol"]}
CPU_SCALE = 0.2  # job wall time = CPUTime x 0.2 (SimulatedPilotSeconds.CPUScale)
ORDER = ["pilot_status", "usage_sampling", "priorities", "taskqueue_cleanup", "director"]


def out(kind: str, **fields) -> None:
    print(json.dumps({"kind": kind, **fields}, default=str))
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--days", type=float, help="simulated days (default: the scale's)")
    parser.add_argument("--step-minutes", type=float, default=2.0)
    parser.add_argument("--slots", type=int, help="job slots in all (default: the scale's)")
    parser.add_argument(
        "--cpu-scale", type=float, help=f"job wall time / CPUTime (default {CPU_SCALE})"
    )
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--chart", default="/tmp/fairshare.html")
    parser.add_argument("--progress", action="store_true", help="a line per simulated hour")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="a gdpconfig parameter for the run, e.g. MatchCPUSegmentPrecedence=false (repeat)",
    )
    args = parser.parse_args()
    with throwaway_database("fairshare"):
        run(args)


def run(args) -> None:  # one scenario, read top to bottom
    from django.conf import settings
    from django.db.models import Count, F

    from core import clock, gdpconfig
    from core.cycles import run_cycle
    from core.models import SimulationClock
    from core.schedules import SCHEDULES
    from matcher import dispatcher, matching
    from matcher import services as job_services
    from matcher.lifecycle import RUNNING_STATES
    from matcher.models import ComputingElement, Job, JobStatus
    from pilots import services as pilot_services  # noqa: F401  (registers the cycles)
    from pilots.models import (
        Credential,
        Pilot,
        PilotStatus,
        PilotStatusHistory,
    )
    from shares.models import GridGroup, User
    from simulation import demo
    from simulation import services as sim_services  # noqa: F401  (its cycle)

    settings.HOUSEKEEPING_IN_BACKGROUND = False  # drops and recomputations inline: repeatable
    wall0 = time.perf_counter()
    rng = random.Random(args.seed)
    scale = SCALES[args.scale]
    days = args.days or scale["days"]
    step = timedelta(minutes=args.step_minutes)

    # --- the world -----------------------------------------------------------------------------
    now0 = clock.now().replace(hour=0, minute=0, second=0, microsecond=0)
    SimulationClock.objects.update_or_create(
        pk=1, defaults={"running": False, "speed": 1.0, "anchor_real": now0, "anchor_sim": now0}
    )
    clock.invalidate()
    demo.create_world()
    groups = {g.name: g for g in GridGroup.objects.all()}
    for name in LHCB_USERS:
        user, _ = User.objects.get_or_create(
            username=name, defaults={"dn": f"{demo.DN_PREFIX}{name}"}
        )
        user.grid_groups.add(groups["lhcb_user"])
    Credential.objects.all().update(expires=now0 + timedelta(days=365))
    for user in User.objects.all():
        for g in user.grid_groups.all():
            Credential.objects.get_or_create(
                dn=user.dn, group=g, defaults={"expires": now0 + timedelta(days=365)}
            )
    for name, value in {
        **demo.DEMO_PARAMETERS,
        "SimulatedPilotSeconds": {
            "Submitted": 30,
            "Scheduled": 60,
            "Aborted": 0.05,
            "JobFailed": 0.05,
            "CPUScale": getattr(args, "cpu_scale", None) or CPU_SCALE,
        },
        **{k: json.loads(v) for k, _, v in (p.partition("=") for p in args.param)},
    }.items():
        gdpconfig.set_value(name, value, comment="bench/fairshare.py")
    ces = list(ComputingElement.objects.select_related("site"))
    if scale["sites"]:
        for ce in ces:
            if ce.site.name not in scale["sites"]:
                ce.status = ComputingElement.Status.BANNED
                ce.save(update_fields=["status"])
    active = [c for c in ces if c.status == ComputingElement.Status.ACTIVE]
    slots_total = getattr(args, "slots", None) or SLOTS[args.scale]
    per_ce = slots_total // len(active)
    for i, ce in enumerate(active):
        ce.max_running_pilots = per_ce + (1 if i < slots_total - per_ce * len(active) else 0)
        ce.max_waiting_pilots = WAITING_PILOTS_PER_CE  # not the demo's few: this grid's own
        ce.save(update_fields=["max_running_pilots", "max_waiting_pilots"])
    slots = {c.name: c.max_running_pilots for c in active}
    setup = gdpconfig.get("DefaultSetup")
    segments = gdpconfig.get("CPUSegments")

    users = {u.username: u for u in User.objects.all()}
    uname = {u.pk: u.username for u in users.values()}
    gname = {g.pk: g.name for g in groups.values()}
    shares_total = sum(groups[g].job_share for g in ("lhcb_user", "lhcb_mc", "lhcb_data"))
    expected = {
        "lhcb_data": groups["lhcb_data"].job_share / shares_total,
        "lhcb_mc": groups["lhcb_mc"].job_share / shares_total,
    }
    for u in LHCB_USERS:
        expected[f"lhcb_user:{u}"] = groups["lhcb_user"].job_share / shares_total / len(LHCB_USERS)
    entities = sorted(expected)

    def entity_of(group_id: int, owner_id: int) -> str:
        g = gname[group_id]
        return f"{g}:{uname[owner_id]}" if g == "lhcb_user" else g

    # --- servability of a TaskQueue on the active CEs (any pilot) -----------------------------
    resources = [(c, matching.ce_resource(c)) for c in active]
    tq_info: dict[int, dict] = {}  # every TaskQueue seen: entity, segment, servable, why not

    def learn_taskqueues() -> None:
        for tq in dispatcher.taskqueue_definitions():
            if tq.id in tq_info:
                continue
            fails = [matching.first_failing_rule(tq, r) for _, r in resources]
            able = [c.name for (c, _), f in zip(resources, fails, strict=True) if f is None]
            tq_info[tq.id] = {
                "entity": entity_of(tq.owner_group_id, tq.owner_id),
                "segment": tq.cpu_time,
                "servable": bool(able),
                "slots": sum(slots[c] for c in able),
                "why": "" if able else "+".join(sorted({f[0] for f in fails if f})),
                "restricted": bool(tq.sites or tq.platforms or tq.banned_sites),
            }

    def waiting_by_tq() -> dict[int, int]:
        return dict(
            Job.objects.filter(status=JobStatus.ACTIVATED)
            .order_by()
            .values_list("task_queue_id")
            .annotate(n=Count("*"))
        )

    def servable_waiting() -> tuple[Counter, Counter]:
        learn_taskqueues()
        ok, bad = Counter(), Counter()
        for tq_id, n in waiting_by_tq().items():
            info = tq_info.get(tq_id)
            if info is None:
                continue
            (ok if info["servable"] else bad)[info["entity"]] += n
        return ok, bad

    def job_spec(group: str) -> dict:
        seg = rng.choices(list(SEGMENT_CPU), weights=MIX[group])[0]  # the job kinds
        r = rng.random()
        req: dict = {}
        for p, restriction in RESTRICTIONS:
            if r < p:
                req = restriction
                break
            r -= p
        return {
            "owner_group": groups[group],
            "setup": setup,
            "cpu_time": rng.choice(SEGMENT_CPU[seg]),
            "user_priority": rng.randint(1, 5),
            "name": f"fairshare.{group}",
            **req,
        }

    def top_up() -> tuple[Counter, int]:
        """Each entity keeps 1.5 x its share of the slots (at least 20) servable jobs waiting."""
        ok, _ = servable_waiting()
        made = 0
        for e in entities:
            target = max(20, int(1.5 * expected[e] * slots_total))
            missing = target - ok[e]
            if missing <= 0:
                continue
            n = missing + missing // 8  # the restricted ones some CE cannot serve come too
            group, _, who = e.partition(":")
            by_user = defaultdict(list)
            for _ in range(n):
                owner = who or rng.choice(SUBMITTERS[group])
                by_user[owner].append(job_spec(group))
            for owner, specs in by_user.items():
                job_services.submit_jobs(users[owner], specs)
            made += n
        return ok, made

    # --- slots: the CE's batch system starts a queued pilot only on a free slot ---------------
    def hold_queued(now) -> int:
        running = Counter(
            Pilot.objects.filter(grid_type="Simulated", status=PilotStatus.RUNNING).values_list(
                "ce", flat=True
            )
        )
        held = []
        due = (
            Pilot.objects.filter(
                grid_type="Simulated",
                status__in=[PilotStatus.SCHEDULED, PilotStatus.READY, PilotStatus.WAITING],
                next_event__lte=now,
            )
            .order_by("next_event", "pk")
            .values_list("pk", "ce")
        )
        free = {ce: slots.get(ce, 0) - running[ce] for ce in slots}
        for pk, ce in due:
            if free.get(ce, 0) > 0:
                free[ce] -= 1
            else:
                held.append(pk)
        for i in range(0, len(held), 500):
            Pilot.objects.filter(pk__in=held[i : i + 500]).update(next_event=now + step)
        return len(held)

    # --- the loop ------------------------------------------------------------------------------
    n_steps = round(days * 86400 / step.total_seconds())
    steps_per_day = round(86400 / step.total_seconds())
    last_run: dict[str, object] = {}
    slot_time: dict[int, Counter] = defaultdict(Counter)  # day -> entity -> running x steps
    running_series: list[dict] = []  # per simulated hour
    hour_acc: Counter = Counter()
    waiting_ok_last_day: dict[str, list[int]] = defaultdict(list)
    unservable_series: list[dict] = []
    held_total = 0
    # The window judged: the last simulated day, or the last half of a run shorter than 2 days.
    window_start = n_steps - min(steps_per_day, n_steps // 2 if days < 2 else steps_per_day)
    window_slot_time: Counter = Counter()
    failed_cycles: Counter = Counter()
    cycle_wall: Counter = Counter()
    made_total = 0
    for i in range(n_steps):
        SimulationClock.objects.filter(pk=1).update(anchor_sim=F("anchor_sim") + step)
        clock.invalidate()
        now = clock.now()
        day = i // steps_per_day
        _, made = top_up()
        made_total += made
        for kind in ORDER:
            prev = last_run.get(kind)
            if prev is not None and now - prev < timedelta(minutes=SCHEDULES[kind]):
                continue
            if kind == "pilot_status":
                held_total += hold_queued(now)
            t0 = time.perf_counter()
            kwargs = {"rng": random.Random(rng.random())} if kind in ("director",) else {}
            if kind == "pilot_status":
                kwargs = {"rng": random.Random(rng.random()), "limit": 10 * slots_total}
            run = run_cycle(kind, **kwargs)
            cycle_wall[kind] += time.perf_counter() - t0
            if run.status != "success":
                failed_cycles[f"{kind}:{run.status}"] += 1
                if failed_cycles[f"{kind}:{run.status}"] <= 3:
                    print(f"# {kind} {run.status}: {run.error[:300]}", file=sys.stderr)
            last_run[kind] = now
        running = Counter()
        for g, o, n in (
            Job.objects.filter(status__in=RUNNING_STATES)
            .order_by()
            .values_list("owner_group_id", "owner_id")
            .annotate(n=Count("*"))
        ):
            running[entity_of(g, o)] += n
        slot_time[day].update(running)
        if i >= window_start:
            window_slot_time.update(running)
            ok, _ = servable_waiting()  # after the cycles: the step's low point
            for e in entities:
                waiting_ok_last_day[e].append(ok[e])
        hour_acc.update(running)
        hour_acc["_steps"] += 1
        if (i + 1) % max(1, int(3600 / step.total_seconds())) == 0:
            steps = hour_acc.pop("_steps")
            total = sum(hour_acc.values())
            running_series.append(
                {
                    "hour": (i + 1) * step.total_seconds() / 3600,
                    "running": total / steps,
                    "share": {e: hour_acc[e] / total if total else 0.0 for e in entities},
                }
            )
            if args.progress:
                _, bad = servable_waiting()
                unservable_series.append({"hour": running_series[-1]["hour"], **bad})
                print(
                    f"# h{running_series[-1]['hour']:.0f} running {total / steps:.0f} "
                    f"jobs made {made_total} wall {time.perf_counter() - wall0:.0f}s "
                    + " ".join(f"{e}={hour_acc[e] / total:.3f}" for e in entities if total),
                    file=sys.stderr,
                )
            hour_acc = Counter()
    end = clock.now()

    # --- results -------------------------------------------------------------------------------
    n_days = max(slot_time) + 1
    achieved = {e: [] for e in entities}
    for d in range(n_days):
        total = sum(slot_time[d][e] for e in entities)
        for e in entities:
            achieved[e].append(slot_time[d][e] / total if total else 0.0)
    cpu = {e: [0.0] * n_days for e in entities}
    for g, o, cpu_t, changed in Job.objects.filter(
        status__in=[JobStatus.FINISHED, JobStatus.FAILED]
    ).values_list("owner_group_id", "owner_id", "cpu_time", "status_changed"):
        d = min(n_days - 1, int((changed - now0).total_seconds() // 86400))
        cpu[entity_of(g, o)][d] += cpu_t
    cpu_share = {e: [] for e in entities}
    for d in range(n_days):
        total = sum(cpu[e][d] for e in entities)
        for e in entities:
            cpu_share[e].append(cpu[e][d] / total if total else 0.0)
    eligible = {
        e: bool(waiting_ok_last_day[e]) and min(waiting_ok_last_day[e]) > expected[e] * slots_total
        for e in entities
    }
    window_total = sum(window_slot_time[e] for e in entities) or 1
    in_window = {e: window_slot_time[e] / window_total for e in entities}
    gaps = {e: (in_window[e] - expected[e]) * 100 for e in entities}
    for e in entities:
        out(
            "entity",
            entity=e,
            expected_share=round(expected[e], 4),
            achieved_share_per_day=[round(x, 4) for x in achieved[e]],
            cpu_delivered_share_per_day=[round(x, 4) for x in cpu_share[e]],
            achieved_share_judged_window=round(in_window[e], 4),
            gap_pp=round(gaps[e], 2),
            servable_waiting_exceeds_share=eligible[e],
            min_servable_waiting_in_window=min(waiting_ok_last_day[e] or [0]),
            share_of_slots=round(expected[e] * slots_total, 1),
        )

    ran_ids = set(
        PilotStatusHistory.objects.filter(to_status=PilotStatus.RUNNING).values_list(
            "pilot_id", flat=True
        )
    )
    no_job_ids = set(
        PilotStatusHistory.objects.filter(
            to_status=PilotStatus.DONE, reason="no job for it"
        ).values_list("pilot_id", flat=True)
    )
    wasted = len(no_job_ids & ran_ids) / len(ran_ids) if ran_ids else 0.0
    eligible_gaps = [abs(gaps[e]) for e in entities if eligible[e]]
    out(
        "summary",
        scale=args.scale,
        params=dict(p.partition("=")[::2] for p in args.param),
        simulated_days=round((end - now0).total_seconds() / 86400, 3),
        step_minutes=args.step_minutes,
        judged_window_hours=round((n_steps - window_start) * step.total_seconds() / 3600, 2),
        slots=slots_total,
        sites=len({c.site.name for c in active}),
        ces=len(active),
        share_measure="running-slot-time (time-averaged running jobs, as WMSHistory)",
        max_share_gap_pp=round(max(eligible_gaps), 2) if eligible_gaps else None,
        max_share_gap_pp_all_entities=round(max(abs(g) for g in gaps.values()), 2),
        entities_in_gap=[e for e in entities if eligible[e]],
        wasted_pilot_fraction=round(wasted, 4),
        pilots_submitted=Pilot.objects.count(),
        pilots_ran=len(ran_ids),
        pilots_no_job=len(no_job_ids & ran_ids),
        pilot_steps_held_for_a_slot=held_total,
        jobs_submitted=made_total,
        jobs_finished=Job.objects.filter(status=JobStatus.FINISHED).count(),
        mean_running_in_window=round(
            sum(window_slot_time.values()) / max(1, n_steps - window_start), 1
        ),
        failed_cycles=dict(failed_cycles),
        cycle_wall_s={k: round(v, 1) for k, v in cycle_wall.items()},
        wall_s=round(time.perf_counter() - wall0, 1),
        targets={"max_share_gap_pp": 2, "wasted_pilot_fraction": 0.10, "wall_s": 600},
        db="postgresql",
    )

    # --- diagnosis (bench/fairshare_diagnosis.py) ------------------------------------------------
    world = SimpleNamespace(
        tq_info=tq_info,
        learn_taskqueues=learn_taskqueues,
        waiting_by_tq=waiting_by_tq,
        entities=entities,
        expected=expected,
        entity_of=entity_of,
        now0=now0,
        window_start=window_start,
        step=step,
        ran_ids=ran_ids,
        no_job_ids=no_job_ids,
        segments=segments,
        gname=gname,
        uname=uname,
        unservable_series=unservable_series,
    )
    diagnose(world, out)

    write_chart(args.chart, entities, expected, running_series, achieved, args)
    out("chart", path=args.chart)


if __name__ == "__main__":
    main()
