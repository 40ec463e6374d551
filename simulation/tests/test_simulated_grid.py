"""The simulated grid: its shared clock, a tick's arrivals, cycles, heartbeats and silent
pilots, and the clock page."""

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from brokerage.models import Task
from brokerage.topology_import import import_topology
from core import clock
from core.models import CycleRun, SimulationClock
from matcher import bulk
from matcher.models import Job, JobStatus
from pilots.models import Pilot, PilotStatus
from simulation import demo as pilot_demo
from simulation import panda_demo, services


@pytest.fixture
def shared_clock(settings, db):
    settings.SIMULATED_CLOCK = True
    clock.invalidate()
    yield
    clock.invalidate()


def test_the_shared_clock_runs_speed_times_faster_and_stands_still_when_paused(shared_clock):
    real = timezone.now()
    SimulationClock.objects.create(
        pk=1, running=True, speed=60.0, anchor_real=real - timedelta(seconds=10), anchor_sim=real
    )
    clock.invalidate()
    ahead = (clock.now() - real).total_seconds()
    assert 599 <= ahead <= 640  # 10 real seconds are 10 simulated minutes
    assert clock.speed() == 60.0
    row = services.set_clock(running=False)
    frozen = clock.now()
    assert not row.running and clock.speed() == 0.0
    assert abs((clock.now() - frozen).total_seconds()) < 1e-3
    services.set_clock(running=True, speed=3600)
    assert clock.speed() == 3600 and clock.now() >= frozen


def test_without_the_simulation_the_clock_is_real_time(db):
    SimulationClock.objects.create(
        pk=1, running=False, speed=60.0, anchor_real=timezone.now(), anchor_sim=timezone.now()
    )
    clock.invalidate()
    assert abs((clock.now() - timezone.now()).total_seconds()) < 1
    assert clock.speed() == 1.0


@pytest.mark.parametrize("speed", [0, -5, "fast", float("nan"), 10**9, True])
def test_a_bad_speed_is_refused_naming_the_field_and_nothing_changes(db, speed):
    before = services.clock_row().speed
    with pytest.raises(services.ClockError) as err:
        services.set_clock(speed=speed)
    assert err.value.field == "speed"
    assert SimulationClock.objects.get(pk=1).speed == before


def test_a_tick_brings_work_runs_the_due_cycles_and_silences_some_pilots(world):
    import_topology(panda_demo.topology())
    bulk.load_jobs(200, seed=7, batch_size=100)
    pilot_demo.first_pilots()
    pilots_running = Pilot.objects.filter(grid_type="Simulated", status=PilotStatus.RUNNING)
    assert pilots_running.exists()
    jobs_before = Job.objects.count()
    counts = services.simulation_tick(rng=random.Random(4), minutes=120)
    assert counts["jobs"] > 0 and Job.objects.count() > jobs_before
    assert counts["tasks"] > 0 and Task.objects.exists()
    ran = {c.split(":")[0] for c in counts["cycles"]}
    assert {"taskqueue_cleanup", "job_brokerage", "task_brokerage"} <= ran
    assert "director" not in ran  # first_pilots ran it a moment ago: not due yet
    assert CycleRun.objects.filter(kind="task_brokerage").exists()
    # Right after, nothing is due again before its simulated interval.
    assert "task_brokerage" not in services.due_cycles(clock.now())
    clock.advance(10 * 60)
    assert "task_brokerage" in services.due_cycles(clock.now())


def test_live_pilots_send_heartbeats_and_silent_ones_do_not(world):
    bulk.load_jobs(200, seed=7, batch_size=100)
    pilot_demo.first_pilots()
    running = list(Job.objects.filter(status=JobStatus.RUNNING).exclude(pilot_reference=""))
    assert len(running) >= 2
    Job.objects.update(heartbeat=None)
    assert services.silence_pilots(random.Random(1), 1) == 1
    silent = Pilot.objects.get(broker="silent (simulated)")
    assert services.send_heartbeats(clock.now()) >= 1
    assert not Job.objects.filter(
        pilot_reference=silent.reference, heartbeat__isnull=False
    ).exists()
    assert Job.objects.filter(status=JobStatus.RUNNING, heartbeat__isnull=False).exists()


def test_a_silent_pilot_whose_job_timed_out_is_failed_and_frees_its_slot(world):
    bulk.load_jobs(200, seed=7, batch_size=100)
    pilot_demo.first_pilots()
    assert services.silence_pilots(random.Random(1), 1) == 1
    silent = Pilot.objects.get(broker="silent (simulated)")
    job = Job.objects.get(pilot=silent, status=JobStatus.RUNNING)
    # While its job still counts as running, the pilot holds its slot.
    assert services.end_silent_pilots() == 0
    Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED)  # the heartbeat timeout
    assert services.end_silent_pilots() == 1
    silent.refresh_from_db()
    assert silent.status == PilotStatus.FAILED
    assert silent.history.last().reason == "silent: its CE reports it gone"
    assert not Pilot.objects.filter(status=PilotStatus.RUNNING, next_event__isnull=True).exists()


def test_staff_pause_resume_and_change_the_speed_on_the_clock_page(db, users, client):
    client.force_login(users["alice"])
    assert client.get("/simulation/").status_code == 200
    assert client.post("/simulation/clock/", {"action": "pause"}).status_code == 403
    client.force_login(users["admin"])
    asked = client.post("/simulation/clock/", {"action": "pause"})
    assert "Pause the simulated clock?" in asked.content.decode()
    assert SimulationClock.objects.get(pk=1).running  # not without a yes
    client.post("/simulation/clock/", {"action": "pause", "confirm": "yes"})
    assert not SimulationClock.objects.get(pk=1).running
    client.post("/simulation/clock/", {"action": "resume"})
    client.post("/simulation/clock/", {"action": "speed", "speed": "120"})
    row = SimulationClock.objects.get(pk=1)
    assert row.running and row.speed == 120 and row.changed_by == users["admin"]
    r = client.post("/simulation/clock/", {"action": "speed", "speed": "-1"}, follow=True)
    assert "speed: must be more than 0" in r.content.decode()
    assert SimulationClock.objects.get(pk=1).speed == 120


def test_a_user_whose_backlog_is_full_submits_no_more_and_the_arrivals_go_to_the_others(world):
    from core import gdpconfig
    from shares.models import User

    gdpconfig.set_value("SimMaxWaitingJobsPerUser", 5)
    made = services.arrive_jobs(random.Random(3), 100)
    waiting = Job.objects.filter(status__in=(JobStatus.ACTIVATED, JobStatus.DEFINED))
    per_user = {u.username: waiting.filter(owner=u).count() for u in User.objects.all()}
    # Four simulated users, five each: the rest of the hundred never arrive.
    assert made == 20
    assert {per_user[u] for u in ("alice", "bob", "carol", "dave")} == {5}
    dave = User.objects.get(username="dave")
    waiting.filter(owner=dave).update(status=JobStatus.FAILED)
    # Only dave has room now: every new arrival is his.
    assert services.arrive_jobs(random.Random(4), 100) == 5
    assert waiting.filter(owner=dave).count() == 5
    assert waiting.count() == 20
