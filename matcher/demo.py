"""The demo world: a handful of sites and CEs, the seed's groups, some users, waiting jobs."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from rest_framework.authtoken.models import Token

from matcher.models import ComputingElement, Job, Site
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
# `manage.py demo` leaves waiting (pilots.demo.job_templates) ask for it. Every CPU time falls
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
EXAMPLE_JOB = {
    "name": "site-test.ce503",
    "cpu_time": 600,
    "grid_ces": ["ce503.cern.ch"],
    "pilot_types": ["private"],
    "submit_pools": ["DIRAC"],
}
CREDENTIAL_DAYS = 30
# Few enough job slots that the simulator's work outgrows them (its jobs run CPUTime x 0.1 s,
# pilots.demo): the groups then compete for slots and the grid reaches its shares, rather
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


# What apps above the matcher add to the demo world (the pilots app: pilot credentials), each a
# function of the world's users, run inside create_world's transaction.
WORLD_STEPS: list[Callable[[list], None]] = []


def register_world_step(fn: Callable[[list], None]) -> Callable[[list], None]:
    WORLD_STEPS.append(fn)
    return fn


@transaction.atomic
def create_world() -> dict:
    """Sites, CEs, groups, users and the admin; safe to run again (nothing is duplicated)."""
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
    users = [_user(name, groups, gnames) for name, gnames in USERS]
    admin = _user(
        "admin",
        groups,
        ["lhcb_user"],
        is_staff=True,
        is_superuser=True,
        password=ADMIN_PASSWORD,
    )
    for step in WORLD_STEPS:  # the pilots app: credentials for every identity
        step([*users, admin])
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
    from matcher.models import JobStatus

    user = User.objects.get(username=EXAMPLE_USER)
    waiting = Job.objects.filter(owner=user, status=JobStatus.ACTIVATED).first()
    if waiting is not None:
        return waiting.pk
    from core import gdpconfig

    spec = {
        "owner_group": user.grid_groups.get(),
        "setup": gdpconfig.get("DefaultSetup"),
        **EXAMPLE_JOB,
    }
    [job] = services.submit_jobs(user, [spec])
    return job.pk


def world_is_empty() -> bool:
    return not Site.objects.exists() and not Job.objects.exists()
