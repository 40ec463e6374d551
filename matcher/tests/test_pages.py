import pytest

from matcher import bulk


@pytest.fixture
def loaded(world):
    return bulk.load_jobs(120, seed=5, batch_size=50)


PAGES = [
    "/",
    "/jobs/",
    "/jobs/?status=activated&group=lhcb_user",
    "/jobs/?site=LCG.CERN.ch",
    "/jobs/submit/",
    "/taskqueues/",
    "/taskqueues/?site=LCG.PIC.es&cpu_time=5000",
    "/sites/",
    "/shares/",
    "/config/cycles/",
]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_answers_for_a_logged_in_user(client, users, loaded, path):
    client.force_login(users["alice"])
    assert client.get(path).status_code == 200


def test_the_home_page_shows_the_state_of_the_grid(client, users, loaded):
    client.force_login(users["admin"])
    html = client.get("/").content.decode()
    assert "120</b> jobs" in html
    assert "plotly-graph-div" in html  # the jobs-by-status chart
    assert "LCG.CERN.ch" in html


def test_the_job_list_filters_by_status_and_paginates(client, users, loaded):
    from matcher.models import Job

    client.force_login(users["admin"])
    first = client.get("/jobs/").content.decode()
    assert "1\u201350 of 120" in first and "?page=2" in first
    third = client.get("/jobs/?page=3").content.decode()
    assert "101\u2013120 of 120" in third
    assert client.get("/jobs/?status=cancelled").content.decode().count("/jobs/") < 10
    last = Job.objects.order_by("id").first()
    assert f'href="/jobs/{last.pk}/"' in third


def test_a_job_page_links_its_taskqueue_and_shows_its_history(client, users, submit):
    job = submit("alice", cpu_time=100)
    client.force_login(users["alice"])
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/taskqueues/{job.task_queue_id}/"' in html
    assert "submitted; joined TaskQueue" in html


def test_the_taskqueue_page_shows_waiting_jobs_by_user_priority(client, users, submit):
    a = submit("alice", cpu_time=100, user_priority=3)
    submit("alice", cpu_time=100, user_priority=3)
    submit("alice", cpu_time=100, user_priority=7)
    client.force_login(users["alice"])
    r = client.get(f"/taskqueues/{a.task_queue_id}/")
    assert [(row["user_priority"], row["jobs"]) for row in r.context["by_priority"]] == [
        (7, 1),
        (3, 2),
    ]


def test_killing_from_the_job_page_cancels_the_job(client, users, submit):
    job = submit("alice", cpu_time=100)
    client.force_login(users["alice"])
    r = client.post(f"/jobs/{job.pk}/kill/", {"confirm": "yes"}, follow=True)
    assert f"Job {job.pk} killed." in r.content.decode()
    job.refresh_from_db()
    assert job.status == "cancelled"


def test_a_kill_without_a_yes_asks_first_and_leaves_the_job_alone(client, users, submit):
    job = submit("alice", cpu_time=100)
    client.force_login(users["alice"])
    r = client.post(f"/jobs/{job.pk}/kill/")
    assert r.status_code == 200
    html = r.content.decode()
    assert f"Kill job {job.pk}?" in html and 'name="confirm" value="yes"' in html
    job.refresh_from_db()
    assert job.status == "activated"


def test_another_user_cannot_open_or_kill_a_job_page(client, users, submit):
    job = submit("alice", cpu_time=100)
    client.force_login(users["bob"])
    assert client.get(f"/jobs/{job.pk}/").status_code == 404
    assert client.post(f"/jobs/{job.pk}/kill/").status_code == 404


def test_detail_pages_lead_back_through_breadcrumbs(client, users, submit):
    job = submit("alice")
    client.force_login(users["alice"])
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    crumbs = '<nav class="breadcrumbs"><a href="/jobs/">Jobs</a> \u203a Job'
    assert f"{crumbs} {job.pk}</nav>" in html
    html = client.get(f"/taskqueues/{job.task_queue_id}/").content.decode()
    assert '<nav class="breadcrumbs"><a href="/taskqueues/">TaskQueues</a>' in html
