"""Times written into text by Python (why a job waits, the brokerage failures panel, a pending
task's reason) are marked simulated while the simulated grid's clock drives the system, and
say how long ago they were, as the pages' `when` filter does: "14:03" alone read as the
reader's own wall-clock time."""

import random
from datetime import timedelta

import pytest

from brokerage.models import Storage, Task, TaskJob
from brokerage.services.production import task_brokerage
from brokerage.topology_import import import_topology
from core import clock
from core.cycles import run_cycle
from core.models import SimulationClock
from matcher.models import Job
from simulation import panda_demo as demo
from web.brokerage.why import brokerage_failures
from web.matcher import why


@pytest.fixture
def simulated(db, settings):
    """The simulated grid's clock, paused: now() stands still at its anchor."""
    settings.SIMULATED_CLOCK = True
    now = clock.now()
    SimulationClock.objects.create(pk=1, running=False, speed=60, anchor_real=now, anchor_sim=now)
    clock.invalidate()
    yield now
    clock.invalidate()


def test_a_label_is_marked_simulated_and_says_how_long_ago_only_on_the_simulated_clock(
    db, settings
):
    at = clock.now().replace(hour=14, minute=3, second=5) - timedelta(days=3)
    assert clock.label(at, "H:i") in ("14:03, 2 d ago", "14:03, 3 d ago")  # the time of day
    settings.SIMULATED_CLOCK = True
    SimulationClock.objects.create(
        pk=1, running=False, speed=60, anchor_real=at, anchor_sim=at + timedelta(minutes=3)
    )
    clock.invalidate()
    try:
        # 3 simulated minutes before the clock, paused 3 real days ago, read at + 3 min: "ago"
        # is on the reader's watch.
        text = clock.label(at, "H:i")
        assert text in ("14:03 (simulated), 2 d ago", "14:03 (simulated), 3 d ago")
        assert clock.label(at, "H:i:s", relative=False) == "14:03:05 (simulated)"
    finally:
        clock.invalidate()


@pytest.fixture
def pending_task(world, api, users, simulated):
    """A task no nucleus can take (no space anywhere), brokered once on the simulated clock."""
    import_topology(demo.topology())
    Storage.objects.filter(nucleus__isnull=False).update(space_free=0.0)
    body = {"name": "t", "owner_group": "lhcb_mc", "n_jobs": 2, "processing_type": "evgen"}
    r = api(users["erin"]).post("/api/v1/tasks/", body, format="json")
    assert r.status_code == 201, r.content
    task_brokerage(rng=random.Random(1))
    return Task.objects.get(pk=r.data["id"])


def test_a_pending_tasks_reason_marks_its_retry_time_simulated(pending_task):
    assert pending_task.status == "pending"
    at = f"{pending_task.retry_after:%H:%M}"
    assert pending_task.status_reason.endswith(f"retry at {at} (simulated)")


def test_why_a_job_waits_for_brokerage_marks_its_times_simulated_with_how_long_ago(
    pending_task,
):
    job = Job.objects.get(pk=TaskJob.objects.filter(task=pending_task).first().job_id)
    parts = {p.title: p for p in why.explain(job)["parts"]}
    lines = [t for t, _ in parts[f"Brokerage of task {pending_task.pk}"].lines]
    decision = next(t for t in lines if t.startswith("Last decision"))
    assert ") at " in decision and " (simulated), just now: pending" in decision
    retry = next(t for t in lines if t.startswith("Brokerage tries again after"))
    assert "(simulated), in " in retry


def test_the_brokerage_failures_panel_marks_its_times_simulated(pending_task, users):
    rows = brokerage_failures(users["admin"])["rows"]
    text = next(t for t, _ in rows if t.startswith(f"task {pending_task.pk} "))
    assert ": pending at " in text and " (simulated), just now — " in text


def test_the_directors_last_cycle_is_marked_simulated(submit, simulated):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    run_cycle("director", rng=random.Random(2))
    parts = {p.title: p for p in why.explain(Job.objects.get(pk=job.pk))["parts"]}
    last = parts["Pilot director"].lines[0][0]
    assert last.startswith("Last cycle at ") and " (simulated), just now: λ = " in last
