"""The demo grid flows: a few simulated hours of `make run`'s world at a small scale, in which
PanDA tasks reach done, the jobs waiting for brokerage do not pile up and the timeout rules act
on stragglers only (bench/demo_health.py measures a full day)."""

import io
import random
from datetime import timedelta

import pytest
from django.core.management import call_command

from brokerage.models import Task, TaskJob
from core import clock
from matcher.models import Job, JobStatus
from simulation import services
from timeouts.models import TimeoutAction

HOURS, STEP_MINUTES = 4, 5


@pytest.fixture
def demo_grid(db):
    quiet = io.StringIO()
    call_command("demo", jobs=300, stdout=quiet, stderr=quiet)
    call_command("brokerage_demo", stdout=quiet, stderr=quiet)


def run(hours: float, rng: random.Random) -> list[int]:
    """Ticks of STEP_MINUTES for `hours`; the jobs in defined after each simulated hour."""
    defined = []
    per_hour = round(60 / STEP_MINUTES)
    for i in range(1, round(hours * per_hour) + 1):
        clock.advance(STEP_MINUTES * 60)
        services.simulation_tick(rng=rng, minutes=STEP_MINUTES)
        if i % per_hour == 0:
            defined.append(Job.objects.filter(status=JobStatus.DEFINED).count())
    return defined


def test_the_demo_grid_brings_tasks_to_done_without_piling_up_defined_jobs_or_timeouts(
    demo_grid,
):
    defined = run(HOURS, random.Random(7))

    done = Task.objects.filter(status="done")
    assert done.filter(kind=Task.Kind.PRODUCTION).exists()
    assert done.filter(kind=Task.Kind.ANALYSIS).exists()
    # The brokerage keeps up with the arrivals: what waits in defined does not grow.
    assert max(defined[len(defined) // 2 :]) <= max(defined[: len(defined) // 2]) + 20
    # Every task the brokerage could not place waits pending for a retry, not for good.
    stuck = Job.objects.filter(
        status=JobStatus.DEFINED, status_changed__lt=clock.now() - timedelta(hours=2)
    )
    assert list(stuck.values_list("name", flat=True)) == []
    assert TimeoutAction.objects.count() <= 0.02 * Job.objects.count()
    assert TaskJob.objects.filter(job__status=JobStatus.FINISHED).count() >= 20
