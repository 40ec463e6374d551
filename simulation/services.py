"""The simulated grid: work arrives, cycles run on their (simulated) schedules, pilots send
heartbeats, and now and then a pilot goes silent so that the timeout rules fire.

One tick is `simulation_tick`, a recorded cycle; `manage.py simulate` runs it every
SimTickSeconds of real time. The clock it advances is the shared simulated clock (core.clock),
which staff pause, resume and speed up on the clock page.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from core import clock, gdpconfig
from core.cycles import CYCLES, cycle, run_cycle
from core.models import CycleRun, SimulationClock
from core.schedules import SCHEDULES
from matcher import services as job_services
from matcher.lifecycle import RUNNING_STATES, SIMULATED_BACKLOG_STATES
from matcher.models import Job
from pilots.director import poisson
from pilots.models import Pilot, PilotStatus
from simulation import demo as demo_world
from simulation import panda_demo

USERS = [  # (user, group, share of the arrivals)
    ("alice", "lhcb_user", 3),
    ("bob", "lhcb_user", 2),
    ("carol", "lhcb_mc", 2),
    ("dave", "lhcb_data", 3),
]
# Who submits the simulated PanDA tasks: (user, group, share of the arrivals). A task's jobs
# wait in its owner's TaskQueues at UserPriority 1, sharing the priority of the owner's entity
# (the group if JobSharing, else the user in it: shares.priorities) with its other waiting jobs
# at UserPriority 1 to 5: behind the demo's backlog they got a few per cent of it and never
# ran. carol has no job in lhcb_user but her analysis tasks' (the demo's PANDA_USERS); lhcb_data,
# whose share carries its production beside dave's jobs, runs the production. lhcb_mc's 0.6 %
# of the grid ran almost none of its site-restricted task jobs.
PRODUCTION_SUBMITTERS = [("dave", "lhcb_data", 1)]
ANALYSIS_SUBMITTERS = [("carol", "lhcb_user", 1)]
# The demo's work mix, shared with the jobs `manage.py demo` leaves waiting (simulation.demo).
CPU_TIMES, DEMO_SITES, SITE_RESTRICTED_FRACTION = (
    demo_world.CPU_TIMES,
    demo_world.DEMO_SITES,
    demo_world.SITE_RESTRICTED_FRACTION,
)


class ClockError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# --- the shared clock ------------------------------------------------------------------------


def clock_row() -> SimulationClock:
    """The clock's row, created running at 60x from the real time if missing."""
    now = timezone.now()
    row, _ = SimulationClock.objects.get_or_create(
        pk=1, defaults={"running": True, "speed": 60.0, "anchor_real": now, "anchor_sim": now}
    )
    return row


def set_clock(user=None, running: bool | None = None, speed=None) -> SimulationClock:
    """Pause, resume or change the speed; the simulated time goes on from where it is."""
    if speed is not None:
        if isinstance(speed, bool) or not isinstance(speed, (int, float, str)):
            raise ClockError("speed", "expected a number")
        try:
            speed = float(speed)
        except ValueError:
            raise ClockError("speed", f"expected a number, got {speed!r}") from None
        top = gdpconfig.get("SimMaxSpeed")
        if not math.isfinite(speed) or speed <= 0 or speed > top:
            raise ClockError("speed", f"must be more than 0 and at most {top:g} (SimMaxSpeed)")
    with transaction.atomic():
        clock_row()
        row = SimulationClock.objects.select_for_update().get(pk=1)
        real = timezone.now()
        sim = row.anchor_sim + (
            (real - row.anchor_real) * row.speed if row.running else timedelta()
        )
        row.anchor_real, row.anchor_sim = real, sim
        if running is not None:
            row.running = running
        if speed is not None:
            row.speed = speed
        row.changed_by = user if getattr(user, "pk", None) else None
        row.save()
    clock.invalidate()
    return row


def simulated_now(row: SimulationClock, real: datetime | None = None) -> datetime:
    real = real or timezone.now()
    if not row.running:
        return row.anchor_sim
    return row.anchor_sim + (real - row.anchor_real) * row.speed


# --- arrivals --------------------------------------------------------------------------------


def _users():
    from shares.models import GridGroup, User

    users = {u.username: u for u in User.objects.filter(username__in=[u for u, *_ in USERS])}
    groups = {g.name: g for g in GridGroup.objects.filter(name__in=[g for _, g, _ in USERS])}
    return [(users[u], groups[g], w) for u, g, w in USERS if u in users and g in groups]


def _site_cpu_limits() -> dict[str, int]:
    from matcher.models import ComputingElement

    return dict(
        ComputingElement.objects.filter(status=ComputingElement.Status.ACTIVE)
        .values_list("site__name")
        .annotate(top=Max("cpu_time_limit"))
        .order_by()
    )


def arrive_jobs(rng: random.Random, n: int) -> int:
    from matcher.taskqueues import cpu_segment

    people = _users()
    if not people or n <= 0:
        return 0
    # A job restricted to sites names some that can run it: their CEs' CPU time limit reaches
    # its CPU segment (the matcher's rule), so no simulated job waits for a CE that is not.
    limits = _site_cpu_limits()
    segments = gdpconfig.get("CPUSegments")
    # A user whose backlog is full submits no more: the arrivals go to the others. Otherwise
    # the users with a small share fill the backlog and those with a large one run dry, and
    # the grid cannot reach its shares for want of their work (docs/user-guide.md, The demo world).
    cap = gdpconfig.get("SimMaxWaitingJobsPerUser")
    backlog = Counter(
        dict(
            Job.objects.filter(status__in=SIMULATED_BACKLOG_STATES)
            .values_list("owner_id")
            .annotate(n=Count("id"))
            .order_by()
        )
    )
    by_user: dict = {}
    for _ in range(n):
        open_ = [p for p in people if backlog[p[0].pk] < cap]
        if not open_:
            break
        user, group, _w = rng.choices(open_, weights=[w for *_, w in open_])[0]
        backlog[user.pk] += 1
        cpu = rng.choice(CPU_TIMES)
        able = [s for s in DEMO_SITES if limits.get(s, 0) >= cpu_segment(cpu, segments)]
        restrict = able and rng.random() < SITE_RESTRICTED_FRACTION
        spec = {
            "owner_group": group,
            "setup": gdpconfig.get("DefaultSetup"),  # the grid's one Setup
            "cpu_time": cpu,
            "user_priority": rng.randint(1, 5),
            "name": "sim",
            "sites": rng.sample(able, rng.randint(1, min(3, len(able)))) if restrict else [],
        }
        by_user.setdefault(user.pk, (user, []))[1].append(spec)
    for user, specs in by_user.values():
        job_services.submit_jobs(user, specs)
    return sum(len(specs) for _, specs in by_user.values())


def _submitters(people) -> list[tuple]:
    """(user, group, weight) of those named who exist and belong to the group."""
    from shares.models import GridGroup, User

    users = {u.username: u for u in User.objects.filter(username__in=[u for u, *_ in people])}
    groups = {g.name: g for g in GridGroup.objects.filter(name__in=[g for _, g, _ in people])}
    return [
        (users[u], groups[g], w)
        for u, g, w in people
        if u in users and g in groups and users[u].grid_groups.filter(pk=groups[g].pk).exists()
    ]


def arrive_tasks(rng: random.Random, production: int, analysis: int) -> int:
    """Production and analysis tasks sized for the demo's grid: a few short jobs each (50 to
    600 s of simulated run time), so that the PanDA users' shares run them within the hour
    they arrive in rather than piling them up at the queues (bench/demo_health.py)."""
    from brokerage.models import Dataset, PandaQueue
    from brokerage.services.submission import submit_task

    if production + analysis <= 0 or not PandaQueue.objects.exists():
        return 0
    made = 0
    datasets = list(Dataset.objects.all()[:5])
    top = panda_demo.MAX_INPUT_GB_PER_JOB
    producers = _submitters(PRODUCTION_SUBMITTERS)
    for _ in range(production if producers else 0):
        owner, group, _w = rng.choices(producers, weights=[w for *_, w in producers])[0]
        kind = rng.choice(["simul", "evgen", "reco"])
        n_jobs = rng.randint(3, 12)
        # Input only where a job's share of it fits the queues' work directories.
        readable = [d for d in datasets if d.size_gb <= top * n_jobs]
        submit_task(
            owner,
            {
                "owner_group": group,
                "name": f"sim.{kind}.{rng.randint(1000, 9999)}",
                "processing_type": kind,
                "priority": rng.choice([400, 500, 600, 900]),
                "core_count": rng.choice([1, 8]),
                "ram_count": rng.choice([1000, 2000]),
                "cpu_time": rng.uniform(5, 60),
                "n_jobs": n_jobs,
                "n_events_per_job": 100,
            },
            [(rng.choice(readable), True)] if readable and rng.random() < 0.3 else [],
        )
        made += 1
    analysts = _submitters(ANALYSIS_SUBMITTERS)
    for _ in range(analysis if analysts else 0):
        owner, group, _w = rng.choices(analysts, weights=[w for *_, w in analysts])[0]
        submit_task(
            owner,
            {
                "owner_group": group,
                "kind": "analysis",
                "name": f"user.{owner.username}.{rng.randint(1000, 9999)}",
                "gshare": "User Analysis",
                "processing_type": "panda-client",
                "task_class": rng.choice(["A", "B", "C"]),
                "ram_count": 2000,
                "cpu_time": rng.uniform(5, 30),
                "n_jobs": rng.randint(3, 10),
                "n_events_per_job": 100,
            },
            [],
        )
        made += 1
    return made


SITE_AD = """\
Name = "{name}"
UpdateSequenceNumber = 1
WantAdRevaluate = True
CurMatches = 0
MaxMatches = 4
Requirements = (CurMatches < MaxMatches) && (TARGET.WANT_SIM_MATCHMAKER =?= TRUE)
GridSite = "{site}"
MatchmakerURL = "{name}.example.org:/jobmanager-condor"
SiteEnvironment = "SiteGatekeeperURL={name}.example.org"
"""
JOB_AD = """\
universe = globus
+WANT_SIM_MATCHMAKER = True
Requirements = TARGET.GridSite =!= UNDEFINED
Rank = -CurMatches/MaxMatches
GlobusScheduler = $$(MatchmakerURL)
environment = $$(SiteEnvironment)
queue
"""


def arrive_job_ads(rng: random.Random, n: int) -> int:
    """A site ad per demo site (once), then n ClassAd job ads."""
    try:
        from classads import ads
        from classads import services as classad_services
        from classads.models import SiteAd
    except ImportError:  # the ClassAd app is optional for the simulator
        return 0
    if not SiteAd.objects.exists():
        for site in DEMO_SITES:
            name = f"sim-{site.split('.')[1].lower()}"
            classad_services.advertise(SITE_AD.format(name=name, site=site), source="simulator")
    from shares.models import User

    carol = User.objects.filter(username="carol").first()
    group = carol and carol.grid_groups.filter(name="lhcb_mc").first()
    if group is None:
        return 0
    # A plain job ad as a submission without nodes gives it (the API's defaults).
    cpu_time = gdpconfig.get("DefaultNodeCPUTime")
    specs = [
        {
            "ad": ads.parse_job_ad(JOB_AD),
            "name": f"sim.ad.{rng.randint(1, 9999)}",
            "owner_group": group,
            "setup": gdpconfig.get("DefaultSetup"),
            "user_priority": 1,
            "is_dag": False,
            "nodes": [{"name": "job", "cpu_time": cpu_time, "submit": ""}],
        }
        for _ in range(n)
    ]
    return len(classad_services.submit_job_ads(carol, specs))


# --- pilots ----------------------------------------------------------------------------------


def send_heartbeats(now) -> int:
    """Every live simulated pilot reports on its running job; silent ones (next_event unset)
    do not."""
    live = Pilot.objects.filter(
        grid_type="Simulated", status=PilotStatus.RUNNING, next_event__isnull=False
    ).values("pk")
    return job_services.record_heartbeats(live, now)


def silence_pilots(rng: random.Random, n: int) -> int:
    """n running simulated pilots stop talking: the CE never moves them again, their jobs get no
    more heartbeats, and the heartbeat timeout fails those jobs later."""
    if n <= 0:
        return 0
    running = list(
        Pilot.objects.filter(
            grid_type="Simulated", status=PilotStatus.RUNNING, next_event__isnull=False
        ).values_list("pk", flat=True)[:500]
    )
    chosen = rng.sample(running, min(n, len(running)))
    Pilot.objects.filter(pk__in=chosen).update(next_event=None, broker="silent (simulated)")
    return len(chosen)


def end_silent_pilots() -> int:
    """A silent pilot whose job the heartbeat timeout has failed is reported failed by its CE,
    as a batch system reports a pilot that died: its job slot is free again. (Without this each
    silent pilot held a slot of its CE for good: 48 of the demo's 210 after a day.)"""
    from pilots.services import set_pilot_status

    silent = Pilot.objects.filter(
        grid_type="Simulated", status=PilotStatus.RUNNING, next_event__isnull=True
    )
    busy = Job.objects.filter(status__in=RUNNING_STATES, pilot_id__isnull=False).values("pilot_id")
    ended = 0
    for pk in silent.exclude(pk__in=busy).values_list("pk", flat=True):
        set_pilot_status(pk, PilotStatus.FAILED, "silent: its CE reports it gone")
        ended += 1
    return ended


def renew_credentials(now) -> int:
    """The simulated VO renews pilot credentials a day before the director would stop using
    them (PilotProxyMinDays), as DIRAC's proxy manager renews proxies from MyProxy: on the
    simulated clock (60x) a month-long credential would otherwise run out in half a day."""
    from pilots.models import Credential
    from simulation.demo import CREDENTIAL_DAYS

    due = now + timedelta(days=gdpconfig.get("PilotProxyMinDays") + 1)
    return Credential.objects.filter(expires__lt=due).update(
        expires=now + timedelta(days=CREDENTIAL_DAYS)
    )


# --- the tick --------------------------------------------------------------------------------


def due_cycles(now) -> list[str]:
    """The cycles whose simulated interval has passed since their last recorded run."""
    last = dict(
        CycleRun.objects.filter(kind__in=list(SCHEDULES))
        .exclude(status=CycleRun.Status.SKIPPED)
        .values_list("kind")
        .annotate(last=Max("started"))
        .order_by()
    )
    out = []
    for kind, minutes in SCHEDULES.items():
        if kind not in CYCLES:
            continue
        started = last.get(kind)
        if started is None or now - started >= timedelta(minutes=minutes):
            out.append(kind)
    return out


@cycle("simulation")
def simulation_tick(rng: random.Random | None = None, minutes: float | None = None) -> dict:
    """One tick: arrivals for the simulated minutes since the last tick, then every cycle that
    is due on the simulated schedule, then heartbeats and silent pilots."""
    rng = rng or random.Random()
    now = clock.now()
    if minutes is None:
        previous = (
            CycleRun.objects.filter(kind="simulation", status=CycleRun.Status.SUCCESS)
            .order_by("-started")
            .values_list("started", flat=True)
            .first()
        )
        minutes = min((now - previous).total_seconds() / 60, 120.0) if previous else 1.0
    minutes = max(minutes, 0.0)
    counts: dict = {"simulated_minutes": round(minutes, 2)}
    waiting = Job.objects.filter(status__in=SIMULATED_BACKLOG_STATES).count()
    if waiting < gdpconfig.get("SimMaxWaitingJobs"):
        counts["jobs"] = arrive_jobs(rng, poisson(gdpconfig.get("SimJobsPerMinute") * minutes, rng))
        counts["tasks"] = arrive_tasks(
            rng,
            poisson(gdpconfig.get("SimProductionTasksPerHour") * minutes / 60, rng),
            poisson(gdpconfig.get("SimAnalysisTasksPerHour") * minutes / 60, rng),
        )
        counts["job_ads"] = arrive_job_ads(
            rng, poisson(gdpconfig.get("SimJobAdsPerHour") * minutes / 60, rng)
        )
    counts["credentials_renewed"] = renew_credentials(now)
    ran = []
    for kind in due_cycles(now):
        run = run_cycle(kind)
        ran.append(f"{kind}:{run.status}")
    counts["cycles"] = ran
    counts["heartbeats"] = send_heartbeats(clock.now())
    counts["silenced"] = silence_pilots(
        rng, poisson(gdpconfig.get("SimSilentPilotsPerHour") * minutes / 60, rng)
    )
    counts["silent_ended"] = end_silent_pilots()
    return counts
