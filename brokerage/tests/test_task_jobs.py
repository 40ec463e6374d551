"""From a task to its jobs and back: the `task` filter shared by the jobs page and the API, the
`task` of an API job, and the links between a task's page and its jobs' pages."""

import re

import pytest

from brokerage.models import Task, TaskJob
from matcher.models import Job, JobStatus


@pytest.fixture
def task(world, api, users):
    body = {"name": "mc.simul", "owner_group": "lhcb_mc", "n_jobs": 3}
    r = api(users["erin"]).post("/api/v1/tasks/", body, format="json")
    assert r.status_code == 201, r.content
    task = Task.objects.get(pk=r.data["id"])
    ids = sorted(TaskJob.objects.filter(task=task).values_list("job_id", flat=True))
    Job.objects.filter(pk=ids[0]).update(status=JobStatus.FAILED)
    Job.objects.filter(pk=ids[1]).update(status=JobStatus.FINISHED)
    task.job_ids = ids
    return task


def test_the_api_lists_a_tasks_jobs_and_names_each_jobs_task(task, submit, api, users):
    plain = submit("erin", owner_group="lhcb_mc")
    client = api(users["erin"])
    r = client.get(f"/api/v1/jobs/?task={task.pk}")
    assert r.status_code == 200
    assert sorted(j["id"] for j in r.data["results"]) == task.job_ids
    assert {j["task"] for j in r.data["results"]} == {task.pk}
    r = client.get(f"/api/v1/jobs/?task={task.pk}&status=failed")
    assert [j["id"] for j in r.data["results"]] == [task.job_ids[0]]
    assert client.get(f"/api/v1/jobs/{task.job_ids[2]}/").data["task"] == task.pk
    assert client.get(f"/api/v1/jobs/{plain.pk}/").data["task"] is None
    # Another task's number lists none of these jobs.
    assert client.get(f"/api/v1/jobs/?task={task.pk + 1000}").data["results"] == []


def test_the_openapi_schema_has_the_task_filter_and_field(world, api, users):
    schema = api(users["alice"]).get("/api/schema/", HTTP_ACCEPT="application/json").json()
    params = {p["name"] for p in schema["paths"]["/api/v1/jobs/"]["get"]["parameters"]}
    assert "task" in params
    assert "task" in schema["components"]["schemas"]["Job"]["properties"]


def test_a_tasks_state_counts_link_to_its_own_jobs_and_each_job_links_back(task, client, users):
    client.force_login(users["erin"])
    html = client.get(f"/brokerage/tasks/{task.pk}/").content.decode()
    assert f'href="/jobs/?task={task.pk}&amp;status=failed"' in html
    assert f'href="/jobs/?task={task.pk}"' in html

    listing = client.get(f"/jobs/?task={task.pk}&status=failed").content.decode()
    shown = {int(n) for n in re.findall(r'href="/jobs/(\d+)/"', listing)}
    assert shown == {task.job_ids[0]}

    page = client.get(f"/jobs/{task.job_ids[0]}/").content.decode()
    assert f'href="/brokerage/tasks/{task.pk}/"' in page
    assert "mc.simul" in page
