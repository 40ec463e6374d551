import pytest

from matcher import dispatcher, services
from matcher.matching import Resource
from matcher.models import Job, JobStatus, JobStatusHistory, TaskQueue, TaskQueueJob


def test_a_submitted_job_is_activated_in_the_taskqueue_of_its_definition(submit):
    job = submit("alice", cpu_time=1234, sites=["LCG.CERN.ch"], user_priority=4)
    tq = TaskQueue.objects.get(pk=job.task_queue_id)
    assert job.status == JobStatus.ACTIVATED
    assert tq.cpu_time == 5000
    assert tq.sites == ["LCG.CERN.ch"]
    assert tq.owner_id == job.owner_id and tq.owner_group.name == "lhcb_user"
    member = TaskQueueJob.objects.get(job=job)
    assert (member.task_queue_id, member.user_priority) == (tq.pk, 4)
    assert JobStatusHistory.objects.get(job=job).to_status == JobStatus.ACTIVATED


def test_jobs_with_the_same_requirements_in_another_order_share_one_taskqueue(submit):
    a = submit("alice", cpu_time=100, sites=["LCG.CERN.ch", "LCG.PIC.es"], tags=["GPU", "16GB"])
    b = submit("alice", cpu_time=400, sites=["LCG.PIC.es", "LCG.CERN.ch"], tags=["16GB", "GPU"])
    assert a.task_queue_id == b.task_queue_id
    assert TaskQueue.objects.count() == 1


def test_a_different_requirement_makes_a_different_taskqueue(submit):
    a = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    b = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"], platforms=["x86_64-el9"])
    c = submit("bob", cpu_time=100, sites=["LCG.CERN.ch"])
    d = submit("alice", cpu_time=600, sites=["LCG.CERN.ch"])
    assert len({a.task_queue_id, b.task_queue_id, c.task_queue_id, d.task_queue_id}) == 4


def test_a_taskqueue_disappears_when_its_last_job_leaves(submit, users):
    a = submit("alice", cpu_time=100)
    b = submit("alice", cpu_time=100)
    tq = a.task_queue_id
    services.kill_job(a.pk, users["alice"])
    assert TaskQueue.objects.filter(pk=tq).exists()
    services.kill_job(b.pk, users["alice"])
    assert not TaskQueue.objects.filter(pk=tq).exists()
    assert Job.objects.get(pk=b.pk).task_queue_id == tq  # the job keeps its record


def test_a_rescheduled_job_joins_the_taskqueue_of_its_definition_again(submit, users):
    from pilots import services as pilots

    job = submit("alice", cpu_time=100)
    services.kill_job(job.pk, users["alice"])
    with pytest.raises(services.JobActionError, match="cancelled, which is final"):
        services.reschedule_job(job.pk, users["alice"])
    job = submit("alice", cpu_time=100)
    dispatcher.match_job(Resource(site="LCG.CERN.ch", setup="any", cpu_time=10**6), "p-1")
    pilots.report_job(job.pk, JobStatus.FAILED, "payload failed")
    job = services.reschedule_job(job.pk, users["alice"])
    assert job.status == JobStatus.ACTIVATED
    assert job.reschedule_count == 1
    assert TaskQueueJob.objects.get(job=job).task_queue_id == job.task_queue_id
    assert [h.to_status for h in job.history.all()] == ["activated", "sent", "failed", "activated"]


def test_cpu_segments_changed_in_gdpconfig_apply_to_new_jobs(submit):
    from core import gdpconfig

    gdpconfig.set_value("CPUSegments", [360, 1800, 86400])
    job = submit("alice", cpu_time=1000)
    assert TaskQueue.objects.get(pk=job.task_queue_id).cpu_time == 1800
