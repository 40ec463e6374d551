import random
from datetime import timedelta

import pytest

from core import clock, gdpconfig
from core.cycles import run_cycle
from matcher.models import Job
from pilots import services as pilots
from pilots.models import Credential, DirectorDecision, Pilot, PilotStatus, PilotStatusHistory
from simulation import simulated_ce


@pytest.fixture
def waiting(submit):
    return [submit("alice", cpu_time=100, sites=["LCG.CERN.ch"]) for _ in range(6)]


def test_a_director_cycle_submits_pilots_and_records_why(waiting):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    run = run_cycle("director")
    assert run.status == "success", run.error
    made = list(Pilot.objects.all())
    assert made and all(p.status == PilotStatus.SUBMITTED for p in made)
    assert {p.site for p in made} == {"LCG.CERN.ch"}  # the list-match kept CERN's CEs only
    assert all(not p.private and p.owner_group == "lhcb_pilot" for p in made)
    decision = DirectorDecision.objects.get(task_queue_id=waiting[0].task_queue_id)
    assert decision.cycle_run == run.pk and decision.submitted == len(made)
    assert decision.submitted <= decision.cap == 6  # SiteDirectorPilotCap: J - waiting
    assert "TaskQueueID" in made[0].requirements
    assert PilotStatusHistory.objects.count() == len(made)


def test_waiting_pilots_count_against_the_seeds_cap(waiting):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value("SiteDirectorPilotCap", False)
    gdpconfig.set_value("pilotsPerIteration", 10000.0)
    run_cycle("director")
    first = Pilot.objects.count()
    assert first == int(1.2 * 6) + 4  # a huge lambda: the cap binds
    run_cycle("director")
    assert Pilot.objects.count() == first  # all still waiting: over the cap, none more
    assert DirectorDecision.objects.filter(submitted=0).exists()


def test_pilots_waiting_longer_than_max_pilot_waiting_hours_no_longer_count(waiting):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    # The seed's cap alone (SiteDirectorPilotCap counts the old pilots at CERN's CEs too).
    gdpconfig.set_value("SiteDirectorPilotCap", False)
    gdpconfig.set_value("pilotsPerIteration", 10000.0)
    run_cycle("director")
    Pilot.objects.update(submitted=clock.now() - timedelta(hours=7))
    assert pilots.waiting_pilots(clock.now()) == {}
    run_cycle("director")
    assert Pilot.objects.count() == 2 * (int(1.2 * 6) + 4)


def test_a_missing_credential_skips_the_taskqueue_with_the_reason(waiting):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    Credential.objects.filter(group__name="lhcb_pilot").delete()
    run_cycle("director")
    assert not Pilot.objects.exists()
    decision = DirectorDecision.objects.get()
    assert "no credential for /DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=pilot" in decision.skipped


def test_a_credential_with_less_than_five_days_left_is_not_used(submit):
    gdpconfig.set_value("PrivatePilotFraction", 1.0)  # bob's pilots are private: his credential
    Credential.objects.filter(dn__endswith="CN=bob").update(expires=clock.now() + timedelta(days=2))
    submit("bob", cpu_time=100)
    run_cycle("director")
    assert not Pilot.objects.exists()
    assert "5 days left" in DirectorDecision.objects.get().skipped


def test_private_pilots_carry_the_owner_and_generic_the_pilot_identity(submit, users):
    gdpconfig.set_value("PrivatePilotFraction", 1.0)
    submit("alice", cpu_time=100)
    run_cycle("director")
    p = Pilot.objects.first()
    assert p.private and p.owner_dn == users["alice"].dn and p.credential_user == users["alice"]
    assert "-O " + users["alice"].dn in p.requirements


def test_a_taskqueue_no_ce_fits_is_skipped_by_the_list_match(submit):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    submit("alice", cpu_time=100, tags=["GPU", "16GB"])  # no demo CE offers both
    run_cycle("director")
    assert "list-match" in DirectorDecision.objects.get().skipped


def test_the_simulated_grid_runs_pilots_that_finish_the_jobs(waiting):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value(
        "SimulatedPilotSeconds",
        {"Submitted": 30, "Scheduled": 60, "Aborted": 0.0, "JobFailed": 0.0, "CPUScale": 0.5},
    )
    run_cycle("director")
    rng = random.Random(4)
    for _ in range(12):
        clock.advance(61)
        simulated_ce.simulated_ce_cycle(rng=rng)
        if Job.objects.filter(status="finished").count() == 6:
            break
    assert Job.objects.filter(status="finished").count() == 6
    job = Job.objects.first()
    assert [h.to_status for h in job.history.all()] == ["activated", "sent", "running", "finished"]
    assert Pilot.objects.filter(reference=job.pilot_reference).exists()
    assert set(Pilot.objects.values_list("status", flat=True)) <= {
        "Done",
        "Running",
        "Submitted",
        "Scheduled",
    }
    assert sum(Pilot.objects.values_list("jobs_done", flat=True)) == 6
