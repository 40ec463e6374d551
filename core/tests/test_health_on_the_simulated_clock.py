"""/healthz and the home page's health panel under the simulated grid's clock, which runs 60
times faster than real time: the cycles run by the wall clock, so they are judged in real time,
and both give the one verdict (web.core.health.health)."""

import os
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from core import clock
from core.cycles import CYCLES
from core.models import CycleRun, SimulationClock
from core.schedules import SCHEDULES


@pytest.fixture
def sixty_times(db, settings):
    """The simulated clock, running at 60x for the last real hour; the cluster's schedules."""
    call_command("setup_schedules", stdout=open(os.devnull, "w"))
    settings.SIMULATED_CLOCK = True
    real = timezone.now()
    SimulationClock.objects.create(
        pk=1, running=True, speed=60, anchor_real=real - timedelta(hours=1), anchor_sim=real
    )
    clock.invalidate()
    yield
    clock.invalidate()


def ran_real(kind, real_seconds_ago, status="success"):
    """A run of `kind` that ended `real_seconds_ago` on the wall clock, stamped on the grid's
    (simulated) clock as the cycles stamp theirs."""
    at = clock.now() - timedelta(seconds=real_seconds_ago * clock.speed())
    CycleRun.objects.create(kind=kind, status=status, started=at, finished=at, real_seconds=0.1)


def every_cycle_ran_on_its_schedule():
    for kind, minutes in SCHEDULES.items():
        if kind in CYCLES:
            ran_real(kind, real_seconds_ago=minutes * 60 - 5)  # just before its next run


def test_cycles_that_run_on_their_real_schedule_are_healthy_at_sixty_times_real_time(
    sixty_times, admin_client
):
    every_cycle_ran_on_its_schedule()
    response = admin_client.get("/healthz")
    assert response.status_code == 200, response.json()
    director = response.json()["cycles"]["director"]
    assert director["last_success_age_s"] == pytest.approx(55, abs=5)  # real, not 55 sim min
    page = admin_client.get("/").content.decode()
    assert 'id="health-verdict"' in page and "machinery is healthy" in page
    assert "/healthz answers 200" in page


def test_a_cycle_truly_overdue_in_real_time_fails_healthz_and_the_home_page_names_it(
    sixty_times, admin_client
):
    every_cycle_ran_on_its_schedule()
    CycleRun.objects.filter(kind="director").delete()
    ran_real("director", real_seconds_ago=300)  # every minute, last 5 real minutes ago
    response = admin_client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["failing"] == ["cycle:director"]
    assert response.json()["cycles"]["director"]["last_success_age_s"] == pytest.approx(300, abs=5)
    page = admin_client.get("/").content.decode()
    assert "machinery is unhealthy (/healthz answers 503)" in page
    assert "Cycle director is overdue: its last success was 5 min ago in real time" in page
    assert 'href="/cycles/?kind=director"' in page


def test_the_home_panel_and_healthz_give_one_verdict_for_every_user(sixty_times, client, users):
    every_cycle_ran_on_its_schedule()
    CycleRun.objects.filter(kind="negotiator").update(status="failed")
    client.force_login(users["alice"])
    assert client.get("/healthz").json() == {"status": "unhealthy", "failing": ["cycle:negotiator"]}
    page = client.get("/").content.decode()
    assert "Cycle negotiator has not succeeded yet: its last run failed" in page
    assert "Nothing blocks the grid" in page  # the director's and brokerage's alerts: none


def test_a_real_age_is_exact_since_the_clock_last_changed_and_a_lower_bound_before(sixty_times):
    now = clock.now()
    assert clock.real_age(now - timedelta(hours=1)) == pytest.approx(60, abs=1)
    row = SimulationClock.objects.get(pk=1)
    before_change = row.anchor_sim - timedelta(hours=2)
    # Two simulated hours before the change: at least the real hour since it, whatever speed
    # the clock ran at then; estimated at the speed it has now.
    assert clock.real_age(before_change, at_least=True) == pytest.approx(3600, abs=2)
    assert clock.real_age(before_change) == pytest.approx(3600 + 120, abs=2)


def test_while_the_clock_is_paused_a_moment_of_the_pause_has_no_known_real_age(db, settings):
    settings.SIMULATED_CLOCK = True
    real = timezone.now()
    paused_at = real + timedelta(days=3)
    ten_min_ago = real - timedelta(minutes=10)
    SimulationClock.objects.create(
        pk=1, running=False, speed=60, anchor_real=ten_min_ago, anchor_sim=paused_at
    )
    clock.invalidate()
    try:
        assert clock.real_age(paused_at) is None
        assert clock.real_age(paused_at, at_least=True) == pytest.approx(0, abs=0.1)
        assert clock.real_ago(paused_at) == "during the pause"
        in_an_hour = paused_at + timedelta(hours=1)
        assert clock.real_ago(in_an_hour) == "in 1 min once the clock runs again"  # at 60x
        # An hour of simulated time before the pause: a minute at 60x, then the pause's ten.
        assert clock.real_age(paused_at - timedelta(hours=1)) == pytest.approx(660, abs=2)
    finally:
        clock.invalidate()
