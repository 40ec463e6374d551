"""Faults on PostgreSQL with real processes: a matcher SIGKILLed mid-claim loses no job and
duplicates none; a cycle SIGKILLed mid-way leaves consistent state and the next run completes
it; two processes starting one cycle at once never run it twice at the same time.
Child processes are in tests/_fault_workers.py."""

import itertools
import multiprocessing
import os
import random
import signal
import time
from collections import Counter

import pytest
from django.db import connection

from tests import _fault_workers as w
from tests._invariants import assert_job_invariants

pytestmark = pytest.mark.django_db(transaction=True)

# spawn, not fork: a forked child would share the parent's database socket.
ctx = multiprocessing.get_context("spawn")


def _db_name():
    return connection.settings_dict["NAME"]


def _load_jobs(n: int, seed: int) -> set[int]:
    from matcher import bulk
    from matcher.models import Job

    templates = bulk.make_templates(random.Random(seed))
    for t in templates:
        t.requirements["pilot_types"] = []  # a generic pilot may take every TaskQueue
    bulk.load_jobs(n, seed=seed, batch_size=1000, templates=templates)
    return set(Job.objects.values_list("pk", flat=True))


def _kill(proc) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    assert proc.exitcode == -signal.SIGKILL


def _drain(out, finished_workers: int) -> list[tuple[str, int]]:
    """Claims reported by workers, until `finished_workers` said they were done."""
    claims, done = [], 0
    while done < finished_workers:
        pilot, job = out.get(timeout=120)
        if job is None:
            done += 1
        else:
            claims.append((pilot, job))
    return claims


def _run_matchers(n: int, prefix: str) -> list[tuple[str, int]]:
    out = ctx.Queue()
    procs = [
        ctx.Process(target=w.claim_until_empty, args=(_db_name(), f"{prefix}-{i}", out))
        for i in range(n)
    ]
    for p in procs:
        p.start()
    claims = _drain(out, n)
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    return claims


def _assert_waiting_state_consistent():
    """Every waiting job is in exactly one existing TaskQueue, the one it records; no other
    job keeps a membership; the per-priority counts equal the membership, so the repair finds
    nothing to fix."""
    from matcher import services

    assert_job_invariants()
    assert services.repair_counts() == 0


def _assert_each_job_claimed_once(submitted: set[int], claims: list[tuple[str, int]]):
    """No job lost, none given twice: every job is sent, to one pilot, with one activated ->
    sent transition; every reported claim is the pilot the database records."""
    from matcher.models import Job, JobStatus, JobStatusHistory

    jobs = dict(Job.objects.values_list("pk", "status"))
    assert set(jobs) == submitted, "a job was lost"
    assert set(jobs.values()) == {JobStatus.SENT}
    sends = Counter(
        JobStatusHistory.objects.filter(
            from_status=JobStatus.ACTIVATED, to_status=JobStatus.SENT
        ).values_list("job_id", flat=True)
    )
    assert set(sends) == submitted and set(sends.values()) == {1}, "a job was sent twice"
    reported = [job for _, job in claims]
    assert len(reported) == len(set(reported)), "a job was reported to two pilots"
    pilot_of = dict(Job.objects.values_list("pk", "pilot_reference"))
    for pilot, job in claims:
        assert pilot_of[job] == pilot


# --- (a) a matcher killed mid-claim -----------------------------------------------------------


def test_a_matcher_killed_while_holding_its_claim_open_loses_that_job_to_nobody(world):
    from matcher.models import Job, JobStatus, TaskQueueJob

    submitted = _load_jobs(150, seed=11)
    out, ready = ctx.Queue(), ctx.Event()
    victim = ctx.Process(target=w.claim_and_hold, args=(_db_name(), "victim", out, ready))
    victim.start()
    try:
        assert ready.wait(60)
        held = out.get(timeout=30)
        assert held in submitted
        # Other matchers work on meanwhile: they skip what the open claim holds (its job and
        # its priority's count row) instead of waiting on it, and take every other job.
        started = time.monotonic()
        claims = _run_matchers(2, "early")
        assert time.monotonic() - started < 60
        job = Job.objects.get(pk=held)
        behind = set(
            Job.objects.filter(
                task_queue_id=job.task_queue_id,
                user_priority=job.user_priority,
                status=JobStatus.ACTIVATED,
            ).values_list("pk", flat=True)
        )
        assert held in behind
        assert {job for _, job in claims} == submitted - behind
    finally:
        _kill(victim)
    # The dead claim was never committed: the job waits in its TaskQueue again.
    job = Job.objects.get(pk=held)
    assert job.status == JobStatus.ACTIVATED and job.pilot_reference != "victim"
    assert TaskQueueJob.objects.filter(job_id=held, task_queue_id=job.task_queue_id).exists()
    _assert_waiting_state_consistent()
    claims += _run_matchers(1, "late")
    assert ("late-0", held) in claims
    _assert_each_job_claimed_once(submitted, claims)
    assert_job_invariants()


def test_matchers_killed_at_random_moments_lose_no_job_and_duplicate_none(world):
    submitted = _load_jobs(400, seed=12)
    rng = random.Random(12)
    out = ctx.Queue()
    alive, killed, serial = [], 0, 0

    def start():
        nonlocal serial
        p = ctx.Process(
            target=w.claim_until_empty,
            args=(_db_name(), f"m-{serial}", out, 0.02, serial),
        )
        serial += 1
        p.start()
        alive.append(p)

    for _ in range(3):
        start()
    # Each claim's transaction stays open up to 20 ms: most kills land inside one.
    while killed < 8 and any(p.is_alive() for p in alive):
        time.sleep(rng.uniform(0.05, 0.3))
        victims = [p for p in alive if p.is_alive()]
        if not victims:
            break
        victim = rng.choice(victims)
        _kill(victim)
        alive.remove(victim)
        killed += 1
        start()
    for p in alive:
        p.join(120)
        assert p.exitcode == 0
    assert killed >= 4, "the workers finished before enough of them were killed"
    claims = []
    while not out.empty():
        pilot, job = out.get(timeout=10)
        if job is not None:
            claims.append((pilot, job))
    _assert_waiting_state_consistent()
    claims += _run_matchers(1, "sweeper")  # whatever the dead ones left waiting
    _assert_each_job_claimed_once(submitted, claims)
    assert_job_invariants()


# --- (b) a cycle killed mid-way ---------------------------------------------------------------


def _production_task(users, n_jobs: int):
    from rest_framework.test import APIClient

    from brokerage.models import Task
    from brokerage.services.production import task_brokerage
    from brokerage.topology_import import import_topology
    from simulation import panda_demo as demo

    import_topology(demo.topology())
    client = APIClient()
    client.force_authenticate(users["erin"])
    body = {"name": "fault", "owner_group": "lhcb_mc", "n_jobs": n_jobs, "processing_type": "evgen"}
    response = client.post("/api/v1/tasks/", body, format="json")
    assert response.status_code == 201, response.content
    task_brokerage(rng=random.Random(3))  # a nucleus: the task is ready for job brokerage
    return Task.objects.get(pk=response.data["id"])


def _job_states(task):
    from brokerage.models import TaskJob
    from matcher.models import Job

    job_ids = list(TaskJob.objects.filter(task=task).values_list("job_id", flat=True))
    return list(Job.objects.filter(pk__in=job_ids).values_list("status", "sites", "task_queue_id"))


def test_a_job_brokerage_cycle_killed_mid_write_leaves_every_job_unplaced_and_the_next_run_places_them(  # noqa: E501
    users,
):
    from brokerage.models import BrokerageRun, TaskJob
    from core.cycles import run_cycle
    from core.models import CycleRun
    from matcher.models import JobStatus

    task = _production_task(users, n_jobs=40)
    before = _job_states(task)
    assert before and all(s != JobStatus.ACTIVATED for s, _, _ in before)
    runs_before = BrokerageRun.objects.filter(task=task).count()

    # Killed inside the cycle's final transaction, after the jobs were activated in it.
    ready = ctx.Event()
    child = ctx.Process(
        target=w.run_cycle_slowed_at,
        args=(_db_name(), "job_brokerage", "matcher.services", "activate_jobs", ready, 600),
    )
    child.start()
    try:
        assert ready.wait(120), "the cycle never reached its write"
    finally:
        _kill(child)

    dead = CycleRun.objects.get(kind="job_brokerage")
    assert dead.status == CycleRun.Status.RUNNING and dead.finished is None
    # Nothing of the half-written placement survived: the jobs are as they were.
    assert _job_states(task) == before
    assert not TaskJob.objects.filter(task=task, queue__isnull=False).exists()
    assert BrokerageRun.objects.filter(task=task).count() == runs_before
    _assert_waiting_state_consistent()

    run = run_cycle("job_brokerage")
    assert run.status == CycleRun.Status.SUCCESS, run.error
    dead.refresh_from_db()
    assert dead.status == CycleRun.Status.ABANDONED
    after = _job_states(task)
    assert {s for s, _, _ in after} == {JobStatus.ACTIVATED}
    assert all(sites and tq for _, sites, tq in after)
    assert not TaskJob.objects.filter(task=task, queue__isnull=True).exists()
    assert BrokerageRun.objects.filter(task=task, cycle_run=run.pk).count() == 1
    _assert_waiting_state_consistent()


# --- (c) one run of a cycle at a time ---------------------------------------------------------


def _run_racing(kind: str, processes: int, rounds: int, seconds: float):
    out, barrier = ctx.Queue(), ctx.Barrier(processes)
    procs = [
        ctx.Process(
            target=w.run_cycle_slowly, args=(_db_name(), kind, seconds, barrier, rounds, out)
        )
        for _ in range(processes)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in range(processes * rounds)]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    return results


def test_two_processes_starting_the_same_cycle_at_once_run_it_once_and_record_the_other_skipped(
    world,
):
    from core.models import CycleRun

    results = _run_racing("taskqueue_cleanup", processes=2, rounds=1, seconds=1.0)
    assert sorted(status for _, _, status in results) == ["skipped", "success"]
    runs = CycleRun.objects.filter(kind="taskqueue_cleanup")
    assert sorted(runs.values_list("status", flat=True)) == ["skipped", "success"]
    skipped = runs.get(status="skipped")
    assert "under way" in skipped.error
    assert_job_invariants()


def test_runs_of_one_cycle_from_four_processes_never_overlap(world):
    from core.models import CycleRun

    results = _run_racing("priorities", processes=4, rounds=4, seconds=0.2)
    statuses = Counter(status for _, _, status in results)
    assert statuses["success"] >= 2 and statuses["skipped"] >= 1, statuses
    assert set(statuses) <= {"success", "skipped"}
    spans = sorted(
        CycleRun.objects.filter(kind="priorities", status="success").values_list(
            "started", "finished"
        )
    )
    assert len(spans) == statuses["success"]
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start, "two runs of the cycle were under way at once"
    assert not CycleRun.objects.filter(kind="priorities", status="running").exists()
    assert_job_invariants()
