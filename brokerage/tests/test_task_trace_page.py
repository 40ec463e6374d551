"""A task's page draws the trace of every kind of brokerage run: task → nucleus, jobs → queues,
analysis jobs → queues (brokered, pending, and throttled before any queue was looked at)."""

import random

import pytest

from brokerage.models import BrokerageRun, GlobalShare, Storage, Task
from brokerage.services.analysis import analysis_brokerage
from brokerage.services.production import job_brokerage, task_brokerage
from brokerage.topology_import import import_topology
from core import gdpconfig
from matcher import services as job_services
from matcher.models import Job, JobStatus
from matcher.services import rollups
from shares.models import GridGroup
from simulation import panda_demo as demo


@pytest.fixture
def panda(world):
    import_topology(demo.topology())
    for name, target in demo.GLOBAL_SHARES:
        GlobalShare.objects.create(name=name, target_pct=target)


def submit_task(api, user, **fields):
    body = {"name": "t", "owner_group": "lhcb_user", "n_jobs": 3, **fields}
    r = api(user).post("/api/v1/tasks/", body, format="json")
    assert r.status_code == 201, r.content
    return Task.objects.get(pk=r.data["id"])


def trace_of(client, task, run):
    r = client.get(f"/brokerage/tasks/{task.pk}/?run={run.pk}")
    assert r.status_code == 200
    return r.content.decode()


def test_the_trace_of_a_throttled_analysis_run_shows_the_throttle_and_its_values(
    panda, api, users, client
):
    alice = users["alice"]
    group = GridGroup.objects.get(name="lhcb_user")
    running = job_services.submit_jobs(
        alice, [{"owner_group": group, "setup": "Production", "cpu_time": 100}] * 3
    )
    Job.objects.filter(pk__in=[j.pk for j in running]).update(status=JobStatus.RUNNING)
    rollups.rebuild()  # the shortcut passed the writer that keeps the job counts
    gdpconfig.set_value("CAP_RUNNING_USER_JOBS", 2)
    task = submit_task(api, alice, kind="analysis")
    analysis_brokerage(rng=random.Random(1), task_ids=[task.pk])
    run = BrokerageRun.objects.get(task=task)
    assert run.outcome == "throttled"

    client.force_login(alice)
    html = trace_of(client, task, run)
    assert 'id="throttle"' in html
    assert "running_jobs" in html and "CAP_RUNNING_USER_JOBS" in html
    # The default view (the latest run) is the same page.
    assert client.get(f"/brokerage/tasks/{task.pk}/").status_code == 200


def test_the_trace_of_every_other_run_kind_draws_its_charts(panda, api, users, client):
    erin, alice = users["erin"], users["alice"]
    production = submit_task(api, erin, owner_group="lhcb_mc")
    task_brokerage(rng=random.Random(1))
    job_brokerage(rng=random.Random(1), task_ids=[production.pk])
    analysis = submit_task(api, alice, kind="analysis")
    analysis_brokerage(rng=random.Random(1), task_ids=[analysis.pk])
    # No nucleus has space: the next production task's task brokerage is pending.
    Storage.objects.filter(nucleus__isnull=False).update(space_free=0.0)
    stuck = submit_task(api, erin, owner_group="lhcb_mc", name="stuck")
    task_brokerage(rng=random.Random(1))

    runs = {
        (r.task_id, r.kind, r.outcome): r
        for r in BrokerageRun.objects.filter(task__in=[production, analysis, stuck])
    }
    assert set(runs) == {
        (production.pk, "task", "assigned"),
        (production.pk, "job", "assigned"),
        (analysis.pk, "analysis", "assigned"),
        (stuck.pk, "task", "pending"),
    }
    client.force_login(users["admin"])
    for (task_id, _kind, outcome), run in runs.items():
        html = trace_of(client, Task.objects.get(pk=task_id), run)
        assert 'id="removed-chart"' in html
        assert ('id="weights-chart"' in html) is (outcome == "assigned")
        assert 'id="throttle"' not in html
