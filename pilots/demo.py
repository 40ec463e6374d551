"""The pilots' part of the demo world: a credential for every identity (matcher/demo.py runs it
inside create_world), and a first director cycle so that the demo opens on a grid at work."""

import random
from datetime import timedelta

from core import clock, gdpconfig
from core.cycles import run_cycle
from core.models import ParameterValue
from matcher.demo import (
    CPU_TIMES,
    CREDENTIAL_DAYS,
    DEMO_PARAMETERS,
    DEMO_SITES,
    SITE_RESTRICTED_FRACTION,
    register_world_step,
)
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
      job slots (matcher.demo.JOB_SLOTS_PER_CE), so the groups compete for them;
    - no CPU-segment precedence in matching: the simulator's jobs all sit in the seed's lower
      segments, and with it a generic pilot takes the biggest ones whatever their group;
    - no pilotsPerJob term: the simulator keeps every user's backlog alike, so half of each
      director cycle's pilots would follow backlogs, not shares;
    - the corrector remembers six hours, not a week (demo_wms_history).
    With the seed's two rules, lhcb_data stayed at 53-60 % of its 79.5 % for 18 simulated hours.
    With these settings, the waiting jobs made like the simulator's (job_templates, the
    simulator's CPU times) and tester's site tests in a group of their own (matcher.demo.GROUPS),
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
    (simulation.services.arrive_jobs, from matcher.demo's work mix): 1 to 3 of the demo's sites
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

    return bulk.make_templates(random.Random(seed), requirements=requirements)


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
