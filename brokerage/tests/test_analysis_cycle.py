"""The analysis brokerage cycle on the database: throttled over a cap, brokered once usage drops;
the retry without data locality; pending 20 minutes; the analysis page."""

import random
from datetime import timedelta

import pytest

from brokerage.models import BrokerageRun, GlobalShare, PandaQueue, Task, TaskJob, TaskStatus
from brokerage.services.analysis import analysis_brokerage
from brokerage.topology_import import import_topology
from core import clock, gdpconfig
from matcher.models import Job, JobStatus
from matcher.services import rollups
from simulation import panda_demo as demo

DATASET = "mc23_13p6TeV.601229.PhPy8EG_ttbar.evgen.EVNT.e8514"


@pytest.fixture
def panda(world):
    import_topology(demo.topology())
    for name, target in demo.GLOBAL_SHARES:
        GlobalShare.objects.create(name=name, target_pct=target)


@pytest.fixture
def alice(api, users):
    return api(users["alice"])


def submit(client, **fields):
    body = {
        "kind": "analysis",
        "name": "user.alice.t",
        "owner_group": "lhcb_user",
        "n_jobs": 4,
    }
    body.update(fields)
    r = client.post("/api/v1/tasks/", body, format="json")
    assert r.status_code == 201, r.content
    return Task.objects.get(pk=r.data["id"])


def run(task):
    return analysis_brokerage(rng=random.Random(1), task_ids=[task.pk])


def test_a_task_over_the_users_cap_is_throttled_then_brokered_once_usage_drops(panda, alice, users):
    from matcher import services as job_services
    from shares.models import GridGroup

    # alice already has 3 jobs running.
    group = GridGroup.objects.get(name="lhcb_user")
    running = job_services.submit_jobs(
        users["alice"],
        [{"owner_group": group, "setup": "Production", "cpu_time": 100} for _ in range(3)],
    )
    Job.objects.filter(pk__in=[j.pk for j in running]).update(
        status=JobStatus.RUNNING, site="LCG.CERN.ch"
    )
    rollups.rebuild()  # the shortcut passed the writer that keeps the job counts
    gdpconfig.set_value("CAP_RUNNING_USER_JOBS", 2)
    task = submit(alice)
    assert run(task)["throttled"] == 1
    task.refresh_from_db()
    assert task.status == TaskStatus.THROTTLED
    trace = BrokerageRun.objects.get(task=task)
    assert trace.outcome == "throttled"
    assert trace.removed_by["throttle"] == {
        "throttle": "running_jobs",
        "running": 3,
        "CAP_RUNNING_USER_JOBS": 2,
    }
    jobs = Job.objects.filter(pk__in=TaskJob.objects.filter(task=task).values("job_id"))
    assert {j.status for j in jobs} == {JobStatus.THROTTLED}
    assert "running_jobs" in jobs[0].history.order_by("-pk")[0].reason

    # Usage drops: one of the running jobs finishes. The next cycle brokers the task.
    Job.objects.filter(pk=running[0].pk).update(status=JobStatus.FINISHED)
    rollups.rebuild()
    result = run(task)
    assert result["brokered"] == 1 and result["jobs"] == 4
    task.refresh_from_db()
    assert task.status == TaskStatus.RUNNING
    assert {j.status for j in jobs.all()} == {JobStatus.ACTIVATED}
    chosen = BrokerageRun.objects.filter(task=task).first().chosen
    assert set(chosen) <= {"ANALY_CERN", "ANALY_PIC", "ANALY_FZK"}


def test_when_persistent_issues_remove_everything_it_retries_without_data_locality(panda, alice):
    # The input is complete only at CERN; ANALY_CERN is offline.
    PandaQueue.objects.filter(name="ANALY_CERN").update(status="offline")
    task = submit(alice, inputs=[{"dataset": DATASET}], io_intensity=500.0)
    assert run(task)["brokered"] == 1
    trace = BrokerageRun.objects.get(task=task)
    assert "retried without the data-locality check" in trace.message
    assert sorted(trace.chosen) == ["ANALY_FZK", "ANALY_PIC"]


def test_an_analysis_task_no_queue_can_take_is_pending_for_20_minutes(panda, alice):
    task = submit(alice, core_count=8)
    assert run(task)["pending"] == 1
    task.refresh_from_db()
    assert task.status == TaskStatus.PENDING
    assert abs(task.retry_after - (clock.now() + timedelta(minutes=20))) < timedelta(seconds=30)
    assert BrokerageRun.objects.get(task=task).removed_by == {"core_count": 3}
    clock.advance(19.5 * 60)
    assert run(task)["tasks"] == 0
    clock.advance(60)
    assert run(task)["tasks"] == 1


def test_staff_reclassify_a_task_and_a_queue_users_cannot(panda, alice, api, users):
    task = submit(alice)
    url = f"/api/v1/tasks/{task.pk}/"
    assert alice.patch(url, {"task_class": "C"}, format="json").status_code == 403
    admin = api(users["admin"])
    assert admin.patch(url, {"task_class": "C"}, format="json").status_code == 200
    assert admin.patch(url, {"task_class": "Z"}, format="json").status_code == 400
    assert admin.patch(url, {"priority": 1}, format="json").status_code == 400
    task.refresh_from_db()
    assert task.task_class == "C" and task.priority == 500
    q = PandaQueue.objects.get(name="ANALY_PIC")
    r = admin.patch(f"/api/v1/panda-queues/{q.pk}/", {"site_class": "hi"}, format="json")
    assert r.status_code == 200 and PandaQueue.objects.get(pk=q.pk).site_class == "hi"


def test_the_analysis_page_shows_caps_share_and_the_stabilizer(panda, alice, client, users):
    task = submit(alice)  # in User Analysis, the system's share for an analysis task
    run(task)
    client.force_login(users["alice"])
    page = client.get("/brokerage/analysis/").content.decode()
    assert 'id="stabilizer-chart"' in page and "ANALY_CERN" in page and "max_q_len" in page
    assert 'id="share-usage"' in page
    # A user cannot look at someone else's standing; staff can.
    assert (
        "bob"
        not in client.get("/brokerage/analysis/?user=bob")
        .content.decode()
        .split("<h1>")[1]
        .split("</h1>")[0]
    )
    client.force_login(users["admin"])
    page = client.get("/brokerage/analysis/?user=bob").content.decode()
    assert "Analysis brokerage for bob" in page
