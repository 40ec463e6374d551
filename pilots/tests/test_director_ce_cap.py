"""SiteDirectorPilotCap: as DIRAC's later SiteDirector, a CE takes no more new pilots
than the waiting jobs a pilot there could run, less the pilots already waiting there; off, the
seed's per-TaskQueue cap alone (int((1 + extraPilotFraction) * J) + extraPilots - waiting)."""

import random

from core import gdpconfig
from core.cycles import run_cycle
from pilots.director import Settings, TaskQueueState, plan
from pilots.models import Pilot
from simulation.simulated_ce import SimulatedBackend

SEED = Settings(pilots_per_iteration=100)  # lambdas in the thousands: only the caps bind
SITE_DIRECTOR = Settings(pilots_per_iteration=100, site_director_cap=True)


def test_the_site_director_cap_is_the_waiting_jobs_less_the_waiting_pilots():
    tqs = [TaskQueueState(1, 1.0, jobs=1, cpu_time=500), TaskQueueState(2, 1.0, 10, 500)]
    seed = {d.tq.id: d.cap for d in plan(tqs, {2: 3}, SEED, random.Random(1))}
    capped = {d.tq.id: d for d in plan(tqs, {2: 3}, SITE_DIRECTOR, random.Random(1))}
    assert seed == {1: int(1.2 * 1) + 4, 2: int(1.2 * 10) + 4 - 3}
    assert {i: d.cap for i, d in capped.items()} == {1: 1, 2: 10 - 3}
    assert {i: d.to_submit for i, d in capped.items()} == {1: 1, 2: 7}


def test_a_ce_takes_no_more_pilots_than_its_runnable_jobs_less_the_pilots_waiting_there():
    backend = SimulatedBackend({"ce-a": 50, "ce-b": 50, "ce-c": 2}, {"ce-a": 3, "ce-c": 0})
    backend.cap_by_runnable_jobs({"ce-a": 5, "ce-c": 40})
    assert backend.free == {"ce-a": 2, "ce-b": 0, "ce-c": 2}  # ce-b: no job it could run


def _one_job_at_pic(submit):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value("pilotsPerIteration", 10000.0)  # a huge lambda: only the caps bind
    return submit("alice", cpu_time=100, sites=["LCG.PIC.es"])  # PIC has one CE


def test_a_taskqueue_with_one_job_gets_no_more_pilots_than_its_ce_can_run(submit):
    _one_job_at_pic(submit)
    run_cycle("director", rng=random.Random(1))
    assert Pilot.objects.count() == 1
    run_cycle("director", rng=random.Random(2))  # that pilot still waits there: none more
    assert Pilot.objects.count() == 1


def test_with_the_switch_off_the_seeds_cap_sends_extra_pilots_for_one_job(submit):
    _one_job_at_pic(submit)
    gdpconfig.set_value("SiteDirectorPilotCap", False)
    run_cycle("director", rng=random.Random(1))
    assert Pilot.objects.count() == int(1.2 * 1) + 4


def test_pilots_already_waiting_at_a_ce_count_against_its_runnable_jobs(submit):
    """Pilots wait at PIC's one CE for a TaskQueue gone since; 3 jobs can run there: one more."""
    _one_job_at_pic(submit)
    submit("bob", cpu_time=100, sites=["LCG.PIC.es"])
    submit("bob", cpu_time=100, sites=["LCG.PIC.es"])
    run_cycle("director", rng=random.Random(1))
    assert Pilot.objects.count() == 3
    Pilot.objects.update(task_queue_id=0)  # their TaskQueues no longer count them
    run_cycle("director", rng=random.Random(2))
    assert Pilot.objects.count() == 3  # the TaskQueues' caps alone would send 3 more
