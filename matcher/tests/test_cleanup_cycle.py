from core.cycles import run_cycle
from matcher.models import Job, TaskQueue, TaskQueueJob


def test_cleanup_reenqueues_an_activated_job_left_outside_its_taskqueue(submit):
    job = submit("alice", cpu_time=100)
    TaskQueueJob.objects.filter(job=job).delete()  # as a crash between two writes would
    TaskQueue.objects.all().delete()
    run = run_cycle("taskqueue_cleanup")
    assert run.status == "success" and run.counts["reenqueued_jobs"] == 1
    member = TaskQueueJob.objects.get(job=job)
    assert Job.objects.get(pk=job.pk).task_queue_id == member.task_queue_id


def test_cleanup_removes_memberships_of_jobs_no_longer_waiting_and_empty_taskqueues(submit):
    job = submit("alice", cpu_time=100)
    Job.objects.filter(pk=job.pk).update(status="running")
    run = run_cycle("taskqueue_cleanup")
    assert run.counts["removed_memberships"] == 1
    assert run.counts["dropped_taskqueues"] == 1
    assert not TaskQueueJob.objects.exists() and not TaskQueue.objects.exists()


def test_cleanup_leaves_a_consistent_grid_untouched(submit):
    submit("alice", cpu_time=100)
    submit("bob", cpu_time=100)
    run = run_cycle("taskqueue_cleanup")
    assert run.counts == {
        "reenqueued_jobs": 0,
        "removed_memberships": 0,
        "repaired_counts": 0,
        "dropped_taskqueues": 0,
    }
    assert TaskQueueJob.objects.count() == 2
