"""The demo world (`manage.py demo`): a handful of sites and CEs, the seed's groups, some users
and their pilot credentials, the local worker node, and the settings and first director cycle
that open it on a grid at work."""

from __future__ import annotations

import random
from datetime import timedelta

from django.db import transaction
from rest_framework.authtoken.models import Token

from core import clock, gdpconfig
from core.cycles import run_cycle
from core.models import ParameterValue
from matcher.models import ComputingElement, Job, JobStatus, Site
from pilots.models import Credential, Pilot
from shares.models import GridGroup, User

DN_PREFIX = "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN="
ADMIN_PASSWORD = "admin"
USER_PASSWORD = "gridwms"

SITES = {
    "LCG.CERN.ch": [
        (
            "ce503.cern.ch",
            "HTCondorCE",
            172800,
            ["x86_64-el9", "x86_64-centos7"],
            ["MultiProcessor", "8Processors", "4Processors", "16GB"],
        ),
        ("ce504.cern.ch", "HTCondorCE", 86400, ["x86_64-el9"], []),
    ],
    "LCG.PIC.es": [
        ("ce07.pic.es", "HTCondorCE", 259200, ["x86_64-el9"], ["MultiProcessor", "4Processors"])
    ],
    "LCG.RAL.uk": [
        ("arc-ce01.gridpp.rl.ac.uk", "ARC", 345600, ["x86_64-el9", "x86_64-centos7"], ["16GB"])
    ],
    "LCG.IN2P3.fr": [("cccondorce01.in2p3.fr", "HTCondorCE", 172800, ["x86_64-centos7"], [])],
    "LCG.CNAF.it": [("ce01-htc.cr.cnaf.infn.it", "HTCondorCE", 86400, ["x86_64-el9"], ["GPU"])],
    "LCG.GRIDKA.de": [
        (
            "arc-1-kit.gridka.de",
            "ARC",
            300000,
            ["x86_64-el9", "aarch64-el9"],
            ["MultiProcessor", "4Processors", "8Processors"],
        )
    ],
}

# The demo's work, as the simulator's arrivals (simulation.services.arrive_jobs) and the jobs
# `manage.py demo` leaves waiting (job_templates) ask for it. Every CPU time falls
# in a CPU segment that each demo CE takes (at most 50,000 s, the seed's third segment): a job
# of 100,000 s would sit in the 300,000 s one, which only two CEs reach, and such jobs pile up
# there while the other CEs run dry (docs/user-guide.md, The demo world).
CPU_TIMES = [300, 1200, 3600, 14400, 40000, 50000]
DEMO_SITES = ["LCG.CERN.ch", "LCG.PIC.es", "LCG.RAL.uk", "LCG.IN2P3.fr", "LCG.CNAF.it"]
# The jobs that name sites (1 to 3 of those that can run them); the others go anywhere.
SITE_RESTRICTED_FRACTION = 0.4

# The seed's three groups (dirac-job-priorities.txt), the site tests' group and the
# generic-pilot credential's group. The site tests (the user guide's hand-started pilot example)
# have a group of their own with a small share: in lhcb_user, a non-JobSharing group whose
# users split its share, tester's job that no director pilot serves held a user's cut of
# lhcb_user's priority (a fifth, more as the others' backlogs drained) and kept the group
# under its share (bench/demo_shares.py).
GROUPS = [
    ("lhcb_user", 10000, False, False, "LHCb users' analysis"),
    ("lhcb_mc", 300, True, False, "Monte Carlo production"),
    ("lhcb_data", 40000, True, False, "Data processing"),
    ("lhcb_test", 100, True, False, "Site tests, run by hand-started pilots"),
    ("lhcb_pilot", 0, False, True, "Generic pilots"),
]

# The groups whose members submit production tasks (DIRAC's ProductionManagement property).
PRODUCTION_GROUPS = {"lhcb_mc", "lhcb_data"}

USERS = [
    ("alice", ["lhcb_user"]),
    ("bob", ["lhcb_user"]),
    ("carol", ["lhcb_user", "lhcb_mc"]),
    ("dave", ["lhcb_data"]),
    ("erin", ["lhcb_mc"]),
    ("pilot", ["lhcb_pilot"]),
    ("tester", ["lhcb_test"]),
]
# The user guide's pilot example: tester's test jobs want a private pilot and the DIRAC submit
# pool, whose pilots this director does not send (SubmitPoolBackends: external), so they wait
# for the pilot you start by hand with tester's credential, and for no other.
EXAMPLE_USER = "tester"
# The demo's PanDA analysis user: her tasks' jobs (UserPriority 1) share her priority in
# lhcb_user with her other waiting jobs (shares.priorities). Behind the demo's waiting jobs
# (UserPriority 1 to 5) they got a few per cent of it and never ran, so the jobs waiting at the
# start are not hers (simulation.services, PanDA arrivals).
PANDA_USERS = ("carol",)
EXAMPLE_JOB = {
    "name": "site-test.ce503",
    "cpu_time": 600,
    "grid_ces": ["ce503.cern.ch"],
    "pilot_types": ["private"],
    "submit_pools": ["DIRAC"],
}
CREDENTIAL_DAYS = 30
# Few enough job slots that the simulator's work outgrows them (its jobs run CPUTime x 0.1 s,
# living_grid_parameters): the groups then compete for slots and the grid reaches its shares, rather
# than running every job at once whatever the shares say (docs/user-guide.md, The demo world).
JOB_SLOTS_PER_CE = 20
# A short queue before them, as a site keeps: pilots queued behind busy slots count as waiting
# for their TaskQueue, and a long queue at one CE would hold its TaskQueues' pilots there while
# other CEs stand idle.
WAITING_PILOTS_PER_CE = 10
# Live parameters the demo sets once (an operator's later change stays): the simulated CEs
# take a submission at once, so a pool may queue a batch for every TaskQueue of a cycle.
DEMO_PARAMETERS = {"EnableSharesCorrection": True, "totalThreadsInPool": 400}


def _user(username: str, groups: dict[str, GridGroup], names: list[str], **extra) -> User:
    user, created = User.objects.get_or_create(
        username=username, defaults={"dn": f"{DN_PREFIX}{username}", **extra}
    )
    if created:
        user.set_password(extra.pop("password", USER_PASSWORD))
        user.save()
    user.grid_groups.add(*[groups[n] for n in names])
    Token.objects.get_or_create(user=user)
    return user


def credentials(users: list) -> None:
    """Pilot credentials for every identity that owns jobs, the admin's too, a month long (the
    simulated grid renews them, as a VO's proxy renewal would)."""
    for user in users:
        for group in user.grid_groups.all():
            Credential.objects.get_or_create(
                dn=user.dn,
                group=group,
                defaults={"expires": clock.now() + timedelta(days=CREDENTIAL_DAYS)},
            )


@transaction.atomic
def create_world() -> dict:
    """Sites, CEs, groups, users, the admin and their pilot credentials; safe to run again
    (nothing is duplicated)."""
    for site_name, ces in SITES.items():
        site, _ = Site.objects.get_or_create(name=site_name)
        for name, ce_type, cpu, platforms, tags in ces:
            ComputingElement.objects.get_or_create(
                name=name,
                defaults={
                    "site": site,
                    "ce_type": ce_type,
                    "cpu_time_limit": cpu,
                    "platforms": platforms,
                    "tags": tags,
                },
            )
    groups = {}
    for name, share, sharing, generic, description in GROUPS:
        groups[name], _ = GridGroup.objects.get_or_create(
            name=name,
            defaults={
                "job_share": share,
                "job_sharing": sharing,
                "generic_pilot": generic,
                "production_management": name in PRODUCTION_GROUPS,
                "description": description,
            },
        )
    # An address each (the console mail backend prints what is sent): e-mail notices work.
    users = [_user(name, groups, gnames, email=f"{name}@example.org") for name, gnames in USERS]
    admin = _user(
        "admin",
        groups,
        ["lhcb_user"],
        email="admin@example.org",
        is_staff=True,
        is_superuser=True,
        password=ADMIN_PASSWORD,
    )
    credentials([*users, admin])
    return {"sites": len(SITES), "groups": len(groups), "users": len(users) + 1, "admin": admin}


def limit_job_slots() -> int:
    """The demo's CEs get its few job slots and short queues (`manage.py demo`; tests keep the
    model's defaults). Returns the CEs changed."""
    names = [ce[0] for ces in SITES.values() for ce in ces]
    return ComputingElement.objects.filter(name__in=names).update(
        max_running_pilots=JOB_SLOTS_PER_CE, max_waiting_pilots=WAITING_PILOTS_PER_CE
    )


def example_job() -> int:
    """The job the user guide's hand-started pilot takes (one waiting is enough): its id."""
    from matcher import services

    user = User.objects.get(username=EXAMPLE_USER)
    waiting = Job.objects.filter(owner=user, status=JobStatus.ACTIVATED).first()
    if waiting is not None:
        return waiting.pk
    spec = {
        "owner_group": user.grid_groups.get(),
        "setup": gdpconfig.get("DefaultSetup"),
        **EXAMPLE_JOB,
    }
    [job] = services.submit_jobs(user, [spec])
    return job.pk


def world_is_empty() -> bool:
    return not Site.objects.exists() and not Job.objects.exists()


# The demo's one real worker node: this machine. Jobs with an executable need the "payload" tag
# (PayloadTags) and go to the Local pool (PayloadSubmitPools), whose backend starts the real
# pilot client here; the simulated pilots never come to this CE (no waiting slots for them), and
# none of them offers the tag, so no simulated pilot "runs" a payload. The real pilots offer it,
# so they require it (matcher.dispatcher.as_matched): they take only jobs with an executable and
# leave the simulated jobs to the simulated CEs.
LOCAL_SITE = "DIRAC.Local.ch"
LOCAL_CE = "localhost"
PAYLOAD_TAG = "payload"
# The local pilots' lifetime. A pilot offers the CPU time it has left and takes only a job whose
# CPU segment that covers: with the seed's segments, a job of up to 500 s CPU time during a
# pilot's first 3,100 s (the user guide's 60 s job among them). A pilot with no job to take
# ends at once; the director starts new ones each minute for the jobs waiting.
LOCAL_PILOT_SECONDS = 3600
LOCAL_PARAMETERS = {
    "PayloadTags": [PAYLOAD_TAG],
    "PayloadSubmitPools": ["Local"],
    "LocalPilotMaxSeconds": LOCAL_PILOT_SECONDS,
}


def local_worker_node(url: str = "") -> ComputingElement:
    """The local CE that real pilot processes serve, and the parameters that route jobs with an
    executable to it (an operator's later change of them stays); `url`: where those pilots
    reach this server (LocalPilotURL). The CE's CPU time limit is its pilots' lifetime
    (LocalPilotMaxSeconds): what the job analysis shows is what its pilots can take."""
    site, _ = Site.objects.get_or_create(name=LOCAL_SITE)
    for name, value in {**LOCAL_PARAMETERS, **({"LocalPilotURL": url} if url else {})}.items():
        if name == "LocalPilotURL" or not ParameterValue.objects.filter(name=name).exists():
            gdpconfig.set_value(name, value, comment="the demo's local worker node")
    lifetime = gdpconfig.get("LocalPilotMaxSeconds")
    ce, created = ComputingElement.objects.get_or_create(
        name=LOCAL_CE,
        defaults={
            "site": site,
            "ce_type": "Local",
            "cpu_time_limit": lifetime,
            "platforms": [],
            "tags": [PAYLOAD_TAG],
            "max_waiting_pilots": 0,
            "max_running_pilots": 4,
        },
    )
    if not created and ce.cpu_time_limit != lifetime:
        ce.cpu_time_limit = lifetime
        ce.save(update_fields=["cpu_time_limit"])
    return ce


# The seed's WMSHistory example remembers a week (weight 80) and the last hour (20). On the
# demo's simulated day the week slice is the whole day: the first hours, while the grid fills
# its empty slots, weigh on the corrections all day. The demo's corrector remembers hours.
DEMO_HISTORY_SECONDS = 6 * 3600


def demo_wms_history() -> dict:
    """The seed's WMSHistory example (shares.corrections.SEED_EXAMPLE), its week slice made
    DEMO_HISTORY_SECONDS long."""
    from shares.corrections import SEED_EXAMPLE

    return {
        name: {
            ("RecentSlice" if key == "WeekSlice" else key): (
                {**value, "TimeSpan": DEMO_HISTORY_SECONDS} if key == "WeekSlice" else value
            )
            for key, value in body.items()
        }
        for name, body in SEED_EXAMPLE.items()
    }


def living_grid_parameters() -> dict:
    """What `manage.py demo` sets for the simulated grid of `make run` to come near its shares
    within a simulated day (bench/demo_shares.py; docs/user-guide.md, The demo world):
    - the simulated CEs run a job for a tenth of its CPU time: the work outgrows the demo's few
      job slots (JOB_SLOTS_PER_CE), so the groups compete for them;
    - no CPU-segment precedence in matching: the simulator's jobs all sit in the seed's lower
      segments, and with it a generic pilot takes the biggest ones whatever their group;
    - no pilotsPerJob term: the simulator keeps every user's backlog alike, so half of each
      director cycle's pilots would follow backlogs, not shares;
    - the corrector remembers six hours, not a week (demo_wms_history).
    With the seed's two rules, lhcb_data stayed at 53-60 % of its 79.5 % for 18 simulated hours.
    With these settings, the waiting jobs made like the simulator's (job_templates, the
    simulator's CPU times) and tester's site tests in a group of their own (GROUPS),
    hours 12-24 averaged lhcb_data 78.3 / 78.9 % of its 79.4 %, lhcb_user 20.8 / 20.2 % of its
    19.8 %, lhcb_mc 1.0 / 0.9 % of its 0.6 % (seeds 7 / 11, bench/demo_shares.py)."""
    return {
        "SimulatedPilotSeconds": {**gdpconfig.get("SimulatedPilotSeconds"), "CPUScale": 0.1},
        "MatchCPUSegmentPrecedence": False,
        "PilotsPerJobTerm": False,
        "WMSHistory": demo_wms_history(),
    }


def job_templates(seed: int = 2026) -> list:
    """The requirement templates of the demo's waiting jobs (matcher.bulk.make_templates: 60,
    owned by the users of its groups), asking for what the simulator's jobs ask for
    (simulation.services.arrive_jobs, from this module's work mix): 1 to 3 of the demo's sites
    for some, nothing else. With bulk's own mix (platforms, tags, single CEs, private pilots,
    submit pools), the jobs waiting at the start reached fewer CEs than those that arrive later:
    generic pilots, which draw among the TaskQueues that match their CE, gave lhcb_user (whose
    users own most of them) 6 to 13 % of the priority they saw at each CE, against its 20 %
    share."""
    from django.db.models import Max

    from matcher import bulk
    from matcher.taskqueues import cpu_segment

    top = cpu_segment(max(CPU_TIMES), gdpconfig.get("CPUSegments"))
    limits = dict(
        ComputingElement.objects.filter(status=ComputingElement.Status.ACTIVE)
        .values_list("site__name")
        .annotate(top=Max("cpu_time_limit"))
        .order_by()
    )
    able = [s for s in DEMO_SITES if limits.get(s, 0) >= top]

    def requirements(rng: random.Random) -> dict:
        if not able or rng.random() >= SITE_RESTRICTED_FRACTION:
            return {}
        return {"sites": rng.sample(able, rng.randint(1, min(3, len(able))))}

    return bulk.make_templates(
        random.Random(seed), requirements=requirements, exclude_owners=[EXAMPLE_USER, *PANDA_USERS]
    )


def first_pilots(seed: int = 2026) -> int:
    """A first director cycle, and the simulated CEs' first steps with it (pilots scheduled,
    then running and matching jobs), so that the demo opens on a grid at work: pilots running
    jobs, usage sampled and priorities corrected. Returns the number of jobs started."""
    for name, value in {**DEMO_PARAMETERS, **living_grid_parameters()}.items():
        if not ParameterValue.objects.filter(name=name).exists():
            gdpconfig.set_value(name, value, comment="the demo world's setting")
    rng = random.Random(seed)
    run_cycle("director", rng=rng)
    for _ in range(2):  # Submitted -> Scheduled -> Running, without waiting for the CE
        Pilot.objects.filter(grid_type="Simulated").update(next_event=clock.now())
        run_cycle("pilot_status", rng=rng)
    run_cycle("usage_sampling")
    run_cycle("priorities")
    return Job.objects.filter(status=JobStatus.RUNNING).count()
