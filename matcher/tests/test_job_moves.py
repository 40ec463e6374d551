"""The job lifecycle's service (matcher.services): each move checked against matcher.lifecycle,
a history row per move, membership and counts exact; what pilots, timeouts, the simulator
and retention call."""

import pytest
from django.db import transaction

from core import clock
from matcher import services
from matcher.models import Job, JobStatus, JobStatusHistory, TaskQueue, TaskQueueJob
from tests._invariants import assert_job_invariants


def held(job: Job, status: str, pilot_id: int = 7) -> Job:
    """A submitted job as a claim and the pilot's reports would leave it."""
    with transaction.atomic():
        services.leave_taskqueues([job.pk])
        Job.objects.filter(pk=job.pk).update(
            status=status, pilot_id=pilot_id, pilot_reference=f"p-{pilot_id}", site="X"
        )
        JobStatusHistory.objects.create(
            job=job, at=clock.now(), from_status="activated", to_status=status
        )
    return Job.objects.get(pk=job.pk)


def test_a_pilot_report_moves_its_job_with_history_and_heartbeat(submit):
    job = held(submit("alice", cpu_time=100), JobStatus.SENT)
    moved = services.report_job(job.pk, JobStatus.RUNNING, "started", pilot_id=7)
    assert (moved.status, moved.status_reason) == (JobStatus.RUNNING, "started")
    assert moved.heartbeat is not None
    done = services.report_job(job.pk, JobStatus.FINISHED, "exit code 0", pilot_id=7)
    last = done.history.last()
    assert (last.from_status, last.to_status, last.reason) == ("running", "finished", "exit code 0")
    assert_job_invariants()


def test_a_report_from_another_pilot_or_against_the_table_writes_nothing(submit):
    job = held(submit("alice", cpu_time=100), JobStatus.RUNNING)
    before = JobStatusHistory.objects.filter(job=job).count()
    with pytest.raises(services.NotHeld, match="no longer held by pilot 8") as caught:
        services.report_job(job.pk, JobStatus.FINISHED, pilot_id=8)
    assert (caught.value.job_id, caught.value.pilot_id) == (job.pk, 8)
    with pytest.raises(services.MoveRefused, match="is running, it cannot become activated"):
        services.report_job(job.pk, JobStatus.ACTIVATED, pilot_id=7)
    assert isinstance(services.MoveRefused("x"), services.JobActionError)
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING
    assert JobStatusHistory.objects.filter(job=job).count() == before


def test_heartbeats_move_only_for_the_holding_pilot(submit):
    job = held(submit("alice", cpu_time=100), JobStatus.RUNNING)
    services.record_heartbeat(job.pk, pilot_id=7)
    assert Job.objects.get(pk=job.pk).heartbeat is not None
    with pytest.raises(services.NotHeld):
        services.record_heartbeat(job.pk, pilot_id=8)
    waiting = submit("alice", cpu_time=100)
    Job.objects.filter(pk=waiting.pk).update(pilot_id=7)  # a stale reference: not held
    with pytest.raises(services.NotHeld, match="is activated: no pilot holds it"):
        services.record_heartbeat(waiting.pk, pilot_id=7)
    assert services.record_heartbeats([7]) == 1  # the running one only


def test_a_move_the_table_does_not_allow_is_refused_single_and_bulk(submit, users):
    job = submit("alice", cpu_time=100)
    with transaction.atomic():
        locked = services.lock_job(job.pk)
        with pytest.raises(services.MoveRefused):
            services.move_job(locked, JobStatus.FINISHED, "no", by="pilot report")
    with pytest.raises(services.MoveRefused), transaction.atomic():
        locked = services.lock_jobs([job.pk])
        step = services.Step(job.pk, JobStatus.CLOSED, "no", by=services.timeout_move("fail"))
        services.move_jobs(locked, [step], clock.now())
    assert Job.objects.get(pk=job.pk).status == JobStatus.ACTIVATED
    assert_job_invariants()


def test_bulk_moves_leave_and_join_taskqueues_and_write_one_history_row_each(submit):
    waiting = [submit("alice", cpu_time=100) for _ in range(3)]
    running = held(submit("alice", cpu_time=100), JobStatus.RUNNING)
    tq = waiting[0].task_queue_id
    now = clock.now()
    with transaction.atomic():
        locked = services.lock_jobs([j.pk for j in [*waiting, running]], ("heartbeat",))
        steps = [
            services.Step(waiting[0].pk, "defined", "back", by="timeout: rebroker"),
            services.Step(waiting[1].pk, "activated", "again", by="timeout: rebroker"),
            services.Step(running.pk, "failed", "silent", by="timeout: fail"),
        ]
        moved = services.move_jobs(locked, steps, now)
    assert moved.reasons[waiting[1].pk] == f"again; joined TaskQueue {tq}"
    assert moved.joined == {waiting[1].pk: tq} and moved.left == set()
    assert Job.objects.get(pk=waiting[1].pk).reschedule_count == 1
    assert set(TaskQueueJob.objects.values_list("job_id", flat=True)) == {
        waiting[1].pk,
        waiting[2].pk,
    }
    assert_job_invariants()


def test_a_kill_empties_and_drops_the_taskqueue_and_purge_takes_only_final_unqueued_jobs(
    submit, users
):
    job, other = submit("alice", cpu_time=100), submit("bob", cpu_time=100)
    tq = job.task_queue_id
    services.kill_job(job.pk, users["alice"])
    assert not TaskQueue.objects.filter(pk=tq).exists()
    with transaction.atomic():
        assert services.purge_jobs([job.pk, other.pk]) == [job.pk]
    assert set(Job.objects.values_list("pk", flat=True)) == {other.pk}
    assert not JobStatusHistory.objects.filter(job_id=job.pk).exists()
    assert_job_invariants()


def test_new_jobs_in_bulk_wait_in_their_taskqueues_counted(users):
    alice = users["alice"]
    group = alice.grid_groups.first()
    spec = {
        "owner_id": alice.pk,
        "owner_group_id": group.pk,
        "name": "node",
        "setup": "LHCb-Production",
        "cpu_time": 100,
        "user_priority": 2,
        "jdl": "",
        "sites": ["LCG.CERN.ch"],
    }
    with transaction.atomic():
        ids = services.enqueue_new_jobs([spec] * 12, reason="made in bulk")
    assert len(ids) == 12
    jobs = Job.objects.filter(pk__in=ids)
    assert {j.status for j in jobs} == {"activated"} and len({j.task_queue_id for j in jobs}) == 1
    assert JobStatusHistory.objects.filter(job_id__in=ids, from_status="").count() == 12
    assert_job_invariants()
