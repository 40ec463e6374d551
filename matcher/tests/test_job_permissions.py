from matcher.models import JobStatus


def test_a_user_cannot_see_another_users_job(api, users, submit):
    job = submit("alice", cpu_time=100)
    assert api(users["bob"]).get(f"/api/v1/jobs/{job.pk}/").status_code == 404
    ids = [j["id"] for j in api(users["bob"]).get("/api/v1/jobs/").data["results"]]
    assert job.pk not in ids


def test_a_user_cannot_kill_or_reschedule_another_users_job(api, users, submit):
    job = submit("alice", cpu_time=100)
    bob = api(users["bob"])
    assert bob.post(f"/api/v1/jobs/{job.pk}/kill/").status_code == 404
    assert bob.post(f"/api/v1/jobs/{job.pk}/reschedule/").status_code == 404
    job.refresh_from_db()
    assert job.status == JobStatus.ACTIVATED


def test_the_owner_kills_its_job_and_a_second_kill_conflicts(api, users, submit):
    job = submit("alice", cpu_time=100)
    alice = api(users["alice"])
    r = alice.post(f"/api/v1/jobs/{job.pk}/kill/")
    assert r.status_code == 200 and r.data["status"] == "cancelled"
    assert r.data["history"][-1]["reason"] == "killed by alice"
    assert alice.post(f"/api/v1/jobs/{job.pk}/kill/").status_code == 409


def test_reschedule_is_refused_for_a_waiting_job_and_after_max_rescheduling(api, users, submit):
    from core import gdpconfig
    from matcher.tests.test_job_actions import put_in_state

    gdpconfig.set_value("MaxRescheduling", 1)
    job = submit("alice", cpu_time=100)
    alice = api(users["alice"])
    assert alice.post(f"/api/v1/jobs/{job.pk}/reschedule/").status_code == 409
    put_in_state(job, JobStatus.FAILED)
    assert alice.post(f"/api/v1/jobs/{job.pk}/reschedule/").status_code == 200
    put_in_state(job, JobStatus.FAILED)
    r = alice.post(f"/api/v1/jobs/{job.pk}/reschedule/")
    assert r.status_code == 409 and "MaxRescheduling" in r.data["detail"]


def test_members_of_a_jobsharing_group_see_and_act_on_each_others_jobs(api, users, submit):
    job = submit("erin", cpu_time=100)  # lhcb_mc has JobSharing; carol is a member too
    carol = api(users["carol"])
    assert carol.get(f"/api/v1/jobs/{job.pk}/").status_code == 200
    assert carol.post(f"/api/v1/jobs/{job.pk}/kill/").status_code == 200


def test_jobs_of_a_group_without_jobsharing_stay_private_to_their_owner(api, users, submit):
    job = submit("bob", cpu_time=100)  # lhcb_user has no JobSharing; carol is a member
    assert api(users["carol"]).get(f"/api/v1/jobs/{job.pk}/").status_code == 404


def test_staff_see_and_kill_every_job(api, users, submit):
    job = submit("dave", cpu_time=100)
    admin = api(users["admin"])
    assert admin.get(f"/api/v1/jobs/{job.pk}/").status_code == 200
    assert admin.post(f"/api/v1/jobs/{job.pk}/kill/").status_code == 200


def test_taskqueues_are_visible_to_their_owner_and_staff_only(api, users, submit):
    job = submit("alice", cpu_time=100)
    url = f"/api/v1/task-queues/{job.task_queue_id}/"
    assert api(users["bob"]).get(url).status_code == 404
    r = api(users["alice"]).get(url)
    assert r.status_code == 200
    assert r.data["waiting_jobs"] == 1
    assert r.data["jobs_by_priority"] == [{"user_priority": 1, "jobs": 1}]
    assert api(users["admin"]).get(url).status_code == 200


def test_anonymous_visitors_are_sent_to_the_login_page(client, world):
    for path in ["/", "/jobs/", "/taskqueues/", "/config/", "/sites/"]:
        r = client.get(path)
        assert r.status_code == 302 and r.url.startswith("/login/"), path
    assert client.get("/api/v1/jobs/").status_code in (401, 403)


def test_only_staff_change_groups_and_sites(api, users, world):
    alice = api(users["alice"])
    assert alice.patch("/api/v1/groups/1/", {"job_share": 5}, format="json").status_code == 403
    assert alice.post("/api/v1/sites/", {"name": "X"}, format="json").status_code == 403
    admin = api(users["admin"])
    r = admin.post("/api/v1/sites/", {"name": "LCG.NEW.org"}, format="json")
    assert r.status_code == 201


def test_a_negative_jobshare_is_refused_naming_the_field(api, users, world):
    from shares.models import GridGroup

    g = GridGroup.objects.get(name="lhcb_user")
    r = api(users["admin"]).patch(f"/api/v1/groups/{g.pk}/", {"job_share": -1}, format="json")
    assert r.status_code == 400 and "job_share" in r.data
    g.refresh_from_db()
    assert g.job_share == 10000


def test_deleting_a_group_that_has_jobs_answers_409_and_deletes_nothing(api, users, submit):
    from shares.models import GridGroup

    submit("alice", cpu_time=100)
    group = GridGroup.objects.get(name="lhcb_user")
    r = api(users["admin"]).delete(f"/api/v1/groups/{group.pk}/")
    assert r.status_code == 409 and "jobs" in r.data["detail"]
    assert GridGroup.objects.filter(pk=group.pk).exists()
