"""The simulated CEs' free waiting slots are shared among a director cycle's TaskQueues in
proportion to their lambda, not taken by the TaskQueues handed over first."""

import random

from core import gdpconfig
from core.cycles import run_cycle
from matcher.models import ComputingElement
from pilots.models import DirectorDecision, Pilot
from simulation.simulated_ce import share_waiting_slots


def test_scarce_waiting_slots_go_to_each_batch_in_proportion_to_its_lambda():
    given = share_waiting_slots(
        [(50, 1.0, ["ce-a"]), (50, 3.0, ["ce-a"])], {"ce-a": 20}, random.Random(1)
    )
    assert sum(map(len, given)) == 20
    assert 4 <= len(given[0]) <= 6 and 14 <= len(given[1]) <= 16  # 1 : 3


def test_the_batch_listed_first_does_not_take_every_slot():
    given = share_waiting_slots(
        [(30, 1.0, ["ce-a"]), (30, 1.0, ["ce-a"]), (30, 1.0, ["ce-a"])],
        {"ce-a": 9},
        random.Random(2),
    )
    assert [len(g) for g in given] == [3, 3, 3]


def test_a_batch_gets_no_more_pilots_than_it_wants_and_only_on_its_own_ces():
    free = {"ce-a": 10, "ce-b": 10}
    given = share_waiting_slots([(3, 100.0, ["ce-a"]), (20, 1.0, ["ce-b"])], free, random.Random(3))
    assert given[0] == ["ce-a"] * 3
    assert given[1] == ["ce-b"] * 10
    assert free == {"ce-a": 7, "ce-b": 0}


def test_every_taskqueue_of_a_cycle_gets_pilots_when_the_ces_have_few_waiting_slots(submit):
    """Before the fix the TaskQueue planned first took all of CERN's waiting slots."""
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value("pilotsPerIteration", 10000.0)  # every TaskQueue wants its whole cap
    ComputingElement.objects.filter(site__name="LCG.CERN.ch").update(max_waiting_pilots=6)
    jobs = [
        submit(u, cpu_time=100, sites=["LCG.CERN.ch"]) for u in ("alice", "dave") for _ in range(20)
    ]
    run = run_cycle("director", rng=random.Random(5))
    assert run.status == "success", run.error
    per_tq = {d.task_queue_id: d.submitted for d in DirectorDecision.objects.all()}
    assert sum(per_tq.values()) == Pilot.objects.count() == 12  # 2 CERN CEs x 6 slots
    assert all(per_tq[j.task_queue_id] > 0 for j in jobs), per_tq


def test_a_simulated_ce_starts_no_more_pilots_than_its_max_running_pilots(submit):
    """max_running_pilots was stored but not enforced: the CE's batch system now keeps a
    scheduled pilot queued until a job slot is free."""
    from datetime import timedelta

    from core import clock
    from simulation import simulated_ce

    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value("pilotsPerIteration", 10000.0)
    gdpconfig.set_value(
        "SimulatedPilotSeconds",
        {"Submitted": 30, "Scheduled": 60, "Aborted": 0.0, "JobFailed": 0.0, "CPUScale": 10.0},
    )
    ComputingElement.objects.update(max_running_pilots=2)
    for _ in range(20):
        submit("alice", cpu_time=1000, grid_ces=["ce504.cern.ch"])
    run_cycle("director", rng=random.Random(7))
    assert Pilot.objects.count() > 2
    rng = random.Random(8)
    for _ in range(4):
        clock.advance(61)
        simulated_ce.simulated_ce_cycle(rng=rng)
    running = Pilot.objects.filter(status="Running")
    assert running.count() == 2
    queued = Pilot.objects.filter(status="Scheduled")
    assert queued.exists()
    assert all(p.next_event > clock.now() - timedelta(seconds=1) for p in queued)
