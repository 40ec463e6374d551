"""Which states kill and reschedule may start from (matcher.lifecycle), through the API and the
job page: every state against the owner and staff, and the claim a reschedule revokes."""

from collections import Counter

import pytest
from django.db import transaction

from matcher import services
from matcher.models import Job, JobStatus, TaskQueueJob, TaskQueuePriorityCount

# Reschedule: the owner from failed only; staff also from the states a pilot holds a job in.
RESCHEDULE = {
    JobStatus.PENDING: (409, 409),
    JobStatus.DEFINED: (409, 409),
    JobStatus.ASSIGNED: (409, 409),
    JobStatus.THROTTLED: (409, 409),
    JobStatus.ACTIVATED: (409, 409),
    JobStatus.SENT: (409, 200),
    JobStatus.STARTING: (409, 200),
    JobStatus.RUNNING: (409, 200),
    JobStatus.HOLDING: (409, 200),
    JobStatus.TRANSFERRING: (409, 200),
    JobStatus.FINISHED: (409, 409),
    JobStatus.FAILED: (200, 200),
    JobStatus.CANCELLED: (409, 409),
    JobStatus.CLOSED: (409, 409),
}

# Kill: the owner and staff alike, from every state that is not final.
KILL = {
    JobStatus.PENDING: (200, 200),
    JobStatus.DEFINED: (200, 200),
    JobStatus.ASSIGNED: (200, 200),
    JobStatus.THROTTLED: (200, 200),
    JobStatus.ACTIVATED: (200, 200),
    JobStatus.SENT: (200, 200),
    JobStatus.STARTING: (200, 200),
    JobStatus.RUNNING: (200, 200),
    JobStatus.HOLDING: (200, 200),
    JobStatus.TRANSFERRING: (200, 200),
    JobStatus.FINISHED: (409, 409),
    JobStatus.FAILED: (409, 409),
    JobStatus.CANCELLED: (409, 409),
    JobStatus.CLOSED: (409, 409),
}


def put_in_state(job: Job, status: str, pilot_reference: str = "") -> Job:
    """Move a submitted job to `status` as the system would have left it (out of its
    TaskQueue unless it waits there)."""
    with transaction.atomic():
        if status != JobStatus.ACTIVATED:
            services.leave_taskqueues([job.pk])
        Job.objects.filter(pk=job.pk).update(status=status, pilot_reference=pilot_reference)
    job.refresh_from_db()
    return job


def assert_memberships_exactly_for_activated_jobs_and_counted():
    """A TaskQueue membership for each activated job and no other; counts equal to them."""
    waiting = set(Job.objects.filter(status=JobStatus.ACTIVATED).values_list("pk", flat=True))
    assert set(TaskQueueJob.objects.values_list("job_id", flat=True)) == waiting
    members = Counter(TaskQueueJob.objects.values_list("task_queue_id", "user_priority"))
    counts = TaskQueuePriorityCount.objects.values_list("task_queue_id", "user_priority", "jobs")
    assert members == Counter({(tq, p): n for tq, p, n in counts if n})


def test_every_state_and_who_may_reschedule_or_kill_from_it_is_in_the_tables():
    assert set(RESCHEDULE) == set(KILL) == set(JobStatus.values)


@pytest.mark.parametrize("status", list(RESCHEDULE), ids=str)
@pytest.mark.parametrize("who", ["alice", "admin"])
def test_reschedule_answers_from_each_state_as_the_table_says(api, users, submit, status, who):
    job = put_in_state(submit("alice", cpu_time=100), status, pilot_reference="p-1")
    expected = RESCHEDULE[status][who == "admin"]
    r = api(users[who]).post(f"/api/v1/jobs/{job.pk}/reschedule/")
    assert r.status_code == expected, r.data
    after = Job.objects.get(pk=job.pk)
    if expected == 409:
        assert after.status == status and after.history.count() == 1  # nothing written
        assert r.data["detail"].startswith(f"job {job.pk} cannot be rescheduled: ")
        assert len(r.data["detail"]) > len(f"job {job.pk} cannot be rescheduled: ")
        assert after.reschedule_count == 0
    else:
        assert after.status == JobStatus.ACTIVATED
        assert TaskQueueJob.objects.filter(job=after, task_queue=after.task_queue_id).exists()
        assert after.pilot_reference == ""
        assert after.reschedule_count == 1
        assert after.history.last().to_status == JobStatus.ACTIVATED
    assert_memberships_exactly_for_activated_jobs_and_counted()


@pytest.mark.parametrize("status", list(KILL), ids=str)
@pytest.mark.parametrize("who", ["alice", "admin"])
def test_kill_answers_from_each_state_as_the_table_says_and_leaves_no_membership(
    api, users, submit, status, who
):
    job = put_in_state(submit("alice", cpu_time=100), status, pilot_reference="p-1")
    expected = KILL[status][who == "admin"]
    r = api(users[who]).post(f"/api/v1/jobs/{job.pk}/kill/")
    assert r.status_code == expected, r.data
    after = Job.objects.get(pk=job.pk)
    if expected == 409:
        assert after.status == status and after.history.count() == 1  # nothing written
        assert r.data["detail"] == f"job {job.pk} cannot be killed: it is already {status}"
    else:
        assert r.data["status"] == after.status == JobStatus.CANCELLED
        assert after.history.last().to_status == JobStatus.CANCELLED
        assert after.history.last().from_status == status
        assert not TaskQueueJob.objects.filter(job=after).exists()
    assert_memberships_exactly_for_activated_jobs_and_counted()


def test_a_finished_job_cannot_be_rescheduled_and_the_answer_says_why(api, users, submit):
    job = put_in_state(submit("alice", cpu_time=100), JobStatus.FINISHED)
    r = api(users["alice"]).post(f"/api/v1/jobs/{job.pk}/reschedule/")
    assert r.status_code == 409
    assert "finished" in r.data["detail"] and "succeeded" in r.data["detail"]
    assert Job.objects.get(pk=job.pk).status == JobStatus.FINISHED


def test_only_staff_reschedule_a_running_job_and_the_answer_says_so(api, users, submit):
    job = put_in_state(submit("alice", cpu_time=100), JobStatus.RUNNING, "p-1")
    r = api(users["alice"]).post(f"/api/v1/jobs/{job.pk}/reschedule/")
    assert r.status_code == 409 and "only staff" in r.data["detail"]


def test_a_staff_reschedule_revokes_the_first_pilots_claim_and_its_reports_are_refused(
    api, users, submit
):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    pilot = api(users["pilot"])
    registered = pilot.post("/api/v1/pilots/", {"reference": "p-1", "site": "LCG.CERN.ch"})
    assert registered.status_code == 201
    body = {"site": "LCG.CERN.ch", "cpu_time": 86400, "pilot_reference": "p-1"}
    assert pilot.post("/api/v1/match/", body, format="json").data["id"] == job.pk
    report = {"status": "running", "pilot_reference": "p-1"}
    assert pilot.post(f"/api/v1/jobs/{job.pk}/status/", report, format="json").status_code == 200

    r = api(users["admin"]).post(f"/api/v1/jobs/{job.pk}/reschedule/")
    assert r.status_code == 200 and r.data["status"] == "activated"
    assert "pilot p-1's claim revoked" in r.data["history"][-1]["reason"]
    last_beat = Job.objects.get(pk=job.pk).heartbeat

    finished = {"status": "finished", "pilot_reference": "p-1"}
    r = pilot.post(f"/api/v1/jobs/{job.pk}/status/", finished, format="json")
    assert r.status_code == 403
    beat = pilot.post(f"/api/v1/jobs/{job.pk}/heartbeat/", {"pilot_reference": "p-1"})
    assert beat.status_code == 403
    job.refresh_from_db()
    assert job.status == JobStatus.ACTIVATED and job.heartbeat == last_beat
    assert job.history.last().to_status == JobStatus.ACTIVATED


def test_a_report_racing_a_reschedule_is_refused_under_the_lock(users, submit):
    """The API checks the pilot's claim before the report; the report itself checks it again
    under the job's lock, so a claim revoked in between is not acted on."""
    from pilots import registry as pilot_registry
    from pilots import services as pilots

    first, _ = pilot_registry.register_pilot(users["pilot"], "p-1", "LCG.CERN.ch")
    second, _ = pilot_registry.register_pilot(users["pilot"], "p-2", "LCG.CERN.ch")
    job = put_in_state(submit("alice", cpu_time=100), JobStatus.RUNNING, "p-1")
    Job.objects.filter(pk=job.pk).update(pilot=first)
    services.reschedule_job(job.pk, users["admin"])
    put_in_state(job, JobStatus.SENT, "p-2")  # a second pilot took it
    Job.objects.filter(pk=job.pk).update(pilot=second)
    with pytest.raises(pilots.PilotError, match="no longer held by pilot p-1"):
        pilots.report_job(job.pk, JobStatus.RUNNING, "", pilot_id=first.pk)
    assert pilots.report_job(job.pk, JobStatus.RUNNING, "", pilot_id=second.pk).status == (
        JobStatus.RUNNING
    )


def test_the_job_page_offers_reschedule_only_where_allowed_and_says_why_not(client, users, submit):
    client.force_login(users["alice"])
    finished = put_in_state(submit("alice", cpu_time=100), JobStatus.FINISHED)
    failed = put_in_state(submit("alice", cpu_time=100), JobStatus.FAILED)
    page = client.get(f"/jobs/{finished.pk}/").content.decode()
    assert f"/jobs/{finished.pk}/reschedule/" not in page
    assert "Reschedule is not offered: it finished" in page
    page = client.get(f"/jobs/{failed.pk}/").content.decode()
    assert f"/jobs/{failed.pk}/reschedule/" in page
    # A stale page's button (the job finished meanwhile) gets the reason, not a rerun.
    put_in_state(failed, JobStatus.FINISHED)
    r = client.post(f"/jobs/{failed.pk}/reschedule/", follow=True)
    assert "cannot be rescheduled: it finished" in r.content.decode()
    assert Job.objects.get(pk=failed.pk).status == JobStatus.FINISHED
