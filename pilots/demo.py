"""The pilots' part of the demo world: a credential for every identity (matcher/demo.py runs it
inside create_world), and a first director cycle so that the demo opens on a grid at work."""

import random
from datetime import timedelta

from config import clock, gdpconfig
from config.cycles import run_cycle
from config.models import ParameterValue
from matcher.demo import CREDENTIAL_DAYS, DEMO_PARAMETERS, register_world_step
from matcher.models import ComputingElement, Job, JobStatus, Site
from pilots import services  # noqa: F401  (registers the director's cycles)
from pilots.models import Credential, Pilot


@register_world_step
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


# The demo's one real worker node: this machine. Jobs with an executable need the "payload" tag
# (PayloadTags) and go to the Local pool (PayloadSubmitPools), whose backend starts the real
# pilot client here; the simulated pilots never come to this CE (no waiting slots for them), and
# none of them offers the tag, so no simulated pilot "runs" a payload.
LOCAL_SITE = "DIRAC.Local.ch"
LOCAL_CE = "localhost"
PAYLOAD_TAG = "payload"
LOCAL_PARAMETERS = {"PayloadTags": [PAYLOAD_TAG], "PayloadSubmitPools": ["Local"]}


def local_worker_node(url: str = "") -> ComputingElement:
    """The local CE that real pilot processes serve, and the parameters that route jobs with an
    executable to it (an operator's later change of them stays); `url`: where those pilots
    reach this server (LocalPilotURL)."""
    site, _ = Site.objects.get_or_create(name=LOCAL_SITE)
    ce, _ = ComputingElement.objects.get_or_create(
        name=LOCAL_CE,
        defaults={
            "site": site,
            "ce_type": "Local",
            "cpu_time_limit": 86400,
            "platforms": [],
            "tags": [PAYLOAD_TAG],
            "max_waiting_pilots": 0,
            "max_running_pilots": 4,
        },
    )
    for name, value in {**LOCAL_PARAMETERS, **({"LocalPilotURL": url} if url else {})}.items():
        if name == "LocalPilotURL" or not ParameterValue.objects.filter(name=name).exists():
            gdpconfig.set_value(name, value, comment="the demo's local worker node")
    return ce


def living_grid_parameters() -> dict:
    """What `manage.py demo` sets for the simulated grid of `make run` to come near its shares
    within a simulated day (bench/demo_shares.py; issue 15, item 4):
    - the simulated CEs run a job for a tenth of its CPU time: the work outgrows the demo's few
      job slots (matcher.demo.JOB_SLOTS_PER_CE), so the groups compete for them;
    - no CPU-segment precedence in matching: the simulator's jobs all sit in the seed's lower
      segments, and with it a generic pilot takes the biggest ones whatever their group;
    - no pilotsPerJob term: the simulator keeps every user's backlog alike, so half of each
      director cycle's pilots would follow backlogs, not shares.
    With the seed's two rules, lhcb_data stayed at 53-60 % of its 79.5 % for 18 simulated hours;
    without, it averaged 84 % from the fourth hour on."""
    return {
        "SimulatedPilotSeconds": {**gdpconfig.get("SimulatedPilotSeconds"), "CPUScale": 0.1},
        "MatchCPUSegmentPrecedence": False,
        "PilotsPerJobTerm": False,
    }


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
