"""The pilots' part of the demo world: a credential for every identity (matcher/demo.py runs it
inside create_world), and a first director cycle so that the demo opens on a grid at work."""

import random
from datetime import timedelta

from config import clock, gdpconfig
from config.cycles import run_cycle
from config.models import ParameterValue
from matcher.demo import CREDENTIAL_DAYS, DEMO_PARAMETERS, register_world_step
from matcher.models import Job, JobStatus
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


def first_pilots(seed: int = 2026) -> int:
    """A first director cycle, and the simulated CEs' first steps with it (pilots scheduled,
    then running and matching jobs), so that the demo opens on a grid at work: pilots running
    jobs, usage sampled and priorities corrected. Returns the number of jobs started."""
    for name, value in DEMO_PARAMETERS.items():
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
