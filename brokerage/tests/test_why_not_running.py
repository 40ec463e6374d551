""" "Why is my job not running?" combines brokerage, matching, priority, pilots and holds."""

import random

import pytest

from brokerage.models import Storage, Task, TaskJob
from brokerage.services.production import job_brokerage, task_brokerage
from brokerage.topology_import import import_topology
from matcher.models import Job, JobStatus
from pilots.models import Pilot, PilotStatus
from simulation import panda_demo as demo
from web.matcher import why


@pytest.fixture
def panda(world):
    import_topology(demo.topology())


def task_job(api, users, **fields):
    body = {"name": "t", "owner_group": "lhcb_mc", "n_jobs": 2, "processing_type": "evgen"}
    body.update(fields)
    r = api(users["erin"]).post("/api/v1/tasks/", body, format="json")
    assert r.status_code == 201, r.content
    task = Task.objects.get(pk=r.data["id"])
    return task, Job.objects.get(pk=TaskJob.objects.filter(task=task).first().job_id)


def parts(job):
    job.refresh_from_db()
    return {p.title.split(" (")[0]: p for p in why.explain(job)["parts"]}


def test_a_job_waiting_for_brokerage_points_at_its_tasks_decision(panda, api, users):
    Storage.objects.filter(nucleus__isnull=False).update(space_free=0.0)
    task, job = task_job(api, users)
    task_brokerage(rng=random.Random(1))
    out = why.explain(Job.objects.get(pk=job.pk))
    assert out["headline"].startswith("It waits for brokerage")
    part = parts(job)[f"Brokerage of task {task.pk}"]
    assert part.blocking
    texts = " ".join(t for t, _ in part.lines)
    assert "pending" in texts and "space 2" in texts and "tries again after" in texts
    assert any(url.startswith(f"/brokerage/tasks/{task.pk}/?run=") for _, url in part.lines)


def test_a_brokered_job_shows_its_taskqueue_rank_pilots_and_the_ces_that_can_take_it(
    panda, api, users
):
    task, job = task_job(api, users)
    task_brokerage(rng=random.Random(1))
    job_brokerage(rng=random.Random(1))
    job.refresh_from_db()
    assert job.status == JobStatus.ACTIVATED
    Pilot.objects.create(
        reference="p-1",
        task_queue_id=job.task_queue_id,
        owner_dn="",
        owner_group="lhcb_pilot",
        submit_pool="default",
        status=PilotStatus.SUBMITTED,
        submitted=job.created,
        status_changed=job.created,
    )
    found = parts(job)
    assert not found[f"Brokerage of task {task.pk}"].blocking
    tq_lines = " ".join(t for t, _ in found["TaskQueue priority and share"].lines)
    assert f"TQ {job.task_queue_id} has priority" in tq_lines
    assert "1 pilot submitted for it wait" in tq_lines
    matching = found["Matching"]
    assert not matching.blocking and "can take it" in matching.lines[0][0]


def test_the_job_page_shows_the_combined_explanation(panda, api, users, client):
    Storage.objects.filter(nucleus__isnull=False).update(space_free=0.0)
    task, job = task_job(api, users)
    task_brokerage(rng=random.Random(1))
    client.force_login(users["erin"])
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Why is it not running yet?" in html and "holds it back" in html
    assert f"/brokerage/tasks/{task.pk}/?run=" in html
