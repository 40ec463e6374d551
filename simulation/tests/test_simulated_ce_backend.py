"""The director reaches the simulated CEs only through the backend table
(settings.SUBMIT_POOL_BACKENDS): their pilots come back Simulated, due to move after
SimulatedPilotSeconds' Submitted; a pool whose kind the table leaves out gets no pilot."""

from datetime import timedelta

from django.test import override_settings

from core import gdpconfig
from core.cycles import run_cycle
from pilots.models import DirectorDecision, Pilot


def test_the_simulated_pools_pilots_are_the_simulated_ces_and_move_when_it_says(submit):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value(
        "SimulatedPilotSeconds",
        {"Submitted": 45, "Scheduled": 60, "Aborted": 0.0, "JobFailed": 0.0, "CPUScale": 0.5},
    )
    for _ in range(3):
        submit("alice", cpu_time=100, submit_pools=["gLite"])
    run_cycle("director")
    pilots = list(Pilot.objects.all())
    assert pilots
    assert {p.grid_type for p in pilots} == {"Simulated"}
    assert all(p.reference.startswith("sim://") for p in pilots)
    assert all(p.next_event - p.submitted == timedelta(seconds=45) for p in pilots)


def test_a_pool_whose_kind_has_no_backend_in_the_table_gets_no_pilot(submit):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    submit("alice", cpu_time=100, submit_pools=["gLite"])
    with override_settings(SUBMIT_POOL_BACKENDS={"local": "pilots.submit_pools.LocalBackend"}):
        run_cycle("director")
    assert not Pilot.objects.exists()
    assert "started outside this director" in DirectorDecision.objects.get().skipped
