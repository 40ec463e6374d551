"""Concurrency on PostgreSQL with several processes: no job lost, none in two TaskQueues, one
TaskQueue per definition, one cycle run at a time."""

import multiprocessing

import pytest
from django.db import connection, connections

from tests._invariants import assert_job_invariants

pytestmark = pytest.mark.django_db(transaction=True)

# spawn, not fork: a forked child would share the parent's open database sockets (the live
# server's among them) and close them on exit. Each child sets Django up on its own.
ctx = multiprocessing.get_context("spawn")


def _child_django(db_name):
    import django
    from django.conf import settings

    django.setup()
    settings.DATABASES["default"]["NAME"] = db_name


def _db_name():
    return connection.settings_dict["NAME"]


def _run_processes(target, args_list):
    procs = [ctx.Process(target=target, args=(_db_name(), *args)) for args in args_list]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    codes = [p.exitcode for p in procs]
    assert codes == [0] * len(procs), f"a worker process failed: exit codes {codes}"


def _submit_many(db_name, username, n, barrier, spec):
    _child_django(db_name)
    try:
        from api.matcher.serializers import JobSubmitSerializer, SubmissionContext
        from matcher import services
        from shares.models import User

        user = User.objects.get(username=username)
        barrier.wait(60)
        for _ in range(n):
            s = JobSubmitSerializer(data=spec, context={"submission": SubmissionContext(user)})
            s.is_valid(raise_exception=True)
            services.submit_jobs(user, [s.validated_data])
    finally:
        connections.close_all()


def _kill_all_waiting(db_name, username, rounds, barrier):
    _child_django(db_name)
    try:
        from matcher import services
        from matcher.models import Job
        from shares.models import User

        user = User.objects.get(username=username)
        barrier.wait(60)
        for _ in range(rounds):
            for pk in Job.objects.filter(owner=user, status="activated").values_list(
                "pk", flat=True
            ):
                try:
                    services.kill_job(pk, user)
                except services.JobActionError:
                    pass  # another killer was faster
    finally:
        connections.close_all()


def test_concurrent_submissions_of_one_new_definition_make_one_taskqueue(users):
    from matcher.models import Job, TaskQueue, TaskQueueJob

    spec = {"cpu_time": 4242, "sites": ["LCG.PIC.es", "LCG.CERN.ch"], "tags": ["GPU"]}
    barrier = ctx.Barrier(4)
    _run_processes(_submit_many, [("alice", 15, barrier, spec)] * 4)
    assert Job.objects.count() == 60
    assert TaskQueue.objects.count() == 1
    tq = TaskQueue.objects.get()
    assert TaskQueueJob.objects.filter(task_queue=tq).count() == 60
    assert set(Job.objects.values_list("task_queue_id", flat=True)) == {tq.pk}
    assert_job_invariants()


def test_kills_emptying_a_taskqueue_while_others_submit_lose_no_job(users):
    from matcher.models import Job, TaskQueue, TaskQueueJob

    spec = {"cpu_time": 100, "sites": ["LCG.CERN.ch"]}
    barrier = ctx.Barrier(4)
    _run_processes(
        _submit_many_or_kill,
        [
            ("alice", spec, barrier, "submit"),
            ("alice", spec, barrier, "submit"),
            ("alice", spec, barrier, "kill"),
            ("alice", spec, barrier, "kill"),
        ],
    )
    waiting = Job.objects.filter(status="activated")
    members = dict(TaskQueueJob.objects.values_list("job_id", "task_queue_id"))
    # Every waiting job is in exactly one existing TaskQueue, the one it records.
    assert set(members) == set(waiting.values_list("pk", flat=True))
    for job in waiting:
        assert members[job.pk] == job.task_queue_id
        assert TaskQueue.objects.filter(pk=job.task_queue_id).exists()
    assert Job.objects.count() == 2 * 25
    # No job in any other state kept a membership.
    assert not TaskQueueJob.objects.exclude(job__status="activated").exists()
    assert_job_invariants()


def _submit_many_or_kill(db_name, username, spec, barrier, role):
    if role == "submit":
        _submit_many(db_name, username, 25, barrier, spec)
    else:
        _kill_all_waiting(db_name, username, 40, barrier)


def _hold_cycle_lock(db_name, kind, ready, release):
    _child_django(db_name)
    try:
        from core.cycles import _advisory_key

        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(%s)", [_advisory_key(kind)])
            ready.set()
            release.wait(60)
    finally:
        connections.close_all()


def test_a_cycle_whose_lock_is_held_by_another_process_is_skipped(db):
    from core.cycles import run_cycle

    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(
        target=_hold_cycle_lock, args=(_db_name(), "taskqueue_cleanup", ready, release)
    )
    holder.start()
    try:
        assert ready.wait(60)
        run = run_cycle("taskqueue_cleanup")
        assert run.status == "skipped"
    finally:
        release.set()
        holder.join(30)
    assert run_cycle("taskqueue_cleanup").status == "success"
    assert_job_invariants()
