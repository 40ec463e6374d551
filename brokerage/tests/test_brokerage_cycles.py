"""The brokerage end to end on the database: submission, the two cycles, traces, pending and
retry, and a pilot at a chosen site matching a brokered job."""

import random
from datetime import timedelta

import pytest

from brokerage.models import (
    BrokerageRun,
    GlobalShare,
    PandaQueue,
    Storage,
    Task,
    TaskJob,
    TaskStatus,
)
from brokerage.services.production import job_brokerage, task_brokerage
from brokerage.services.world import queue_counts
from brokerage.topology_import import TopologyError, import_topology
from core import clock, gdpconfig
from core.cycles import run_cycle
from core.models import CycleRun
from matcher import dispatcher
from matcher.matching import Resource
from matcher.models import Job, JobStatus, TaskQueueJob
from shares.models import GridGroup
from simulation import panda_demo as demo

URL = "/api/v1/tasks/"
DATASET = "mc23_13p6TeV.601229.PhPy8EG_ttbar.evgen.EVNT.e8514"


@pytest.fixture
def panda(world):
    import_topology(demo.topology())
    return world


@pytest.fixture
def erin(api, users):
    return api(users["erin"])


def submit(client, **fields):
    body = {"name": "t", "owner_group": "lhcb_mc", "n_jobs": 3, "n_events_per_job": 100}
    body.update(fields)
    return client.post(URL, body, format="json")


def test_a_production_task_is_brokered_to_a_nucleus_its_jobs_to_queues_and_a_pilot_runs_one(
    panda, erin, users
):
    r = submit(
        erin,
        name="ttbar",
        release="Athena-24.0.30",
        architecture="x86_64-el9-gcc13-opt",
        inputs=[{"dataset": DATASET}],
        core_count=8,
        n_jobs=100,
    )
    assert r.status_code == 201, r.content
    task = Task.objects.get(pk=r.data["id"])
    assert task.status == TaskStatus.ASSIGNING
    assert Job.objects.filter(status=JobStatus.DEFINED).count() == 100

    run = run_cycle("task_brokerage", rng=random.Random(3))
    assert run.status == CycleRun.Status.SUCCESS and run.counts["assigned"] == 1
    task.refresh_from_db()
    # Only CERN holds the input (800 GB, 400 files): RAL fails the locality check.
    assert task.nucleus.name == "CERN-PROD" and task.status == TaskStatus.READY
    trace = BrokerageRun.objects.get(task=task, kind="task")
    assert trace.cycle_run == run.pk
    assert trace.removed_by == {"data_locality": 1}

    run = run_cycle("job_brokerage", rng=random.Random(3))
    assert run.status == CycleRun.Status.SUCCESS and run.counts["jobs"] == 100
    task.refresh_from_db()
    assert task.status == TaskStatus.RUNNING
    trace = BrokerageRun.objects.get(task=task, kind="job")
    # 8-core task: only the three MCORE queues can take it.
    assert sorted(trace.chosen) == ["CERN-PROD_MCORE", "FZK-LCG2_MCORE", "PIC_MCORE"]
    assert trace.removed_by == {"core_count": 3}
    sites = {"LCG.CERN.ch", "LCG.GRIDKA.de", "LCG.PIC.es"}
    jobs = Job.objects.filter(pk__in=TaskJob.objects.filter(task=task).values("job_id"))
    assert all(j.status == JobStatus.ACTIVATED and set(j.sites) == sites for j in jobs)
    assert TaskQueueJob.objects.filter(job__in=jobs).count() == 100
    assert all(tj.queue.name in trace.chosen for tj in TaskJob.objects.filter(task=task))
    history = jobs[0].history.order_by("pk")
    assert [h.to_status for h in history] == ["defined", "activated"]
    assert "job brokerage" in history[1].reason

    # A pilot at one of those sites matches one of the task's jobs.
    found = dispatcher.match_job(
        Resource(site="LCG.PIC.es", grid_ce="ce07.pic.es", cpu_time=86400, setup="LHCb-Production"),
        "pilot-1",
    )
    assert found is not None and found.job.id in {j.pk for j in jobs}
    job = Job.objects.get(pk=found.job.id)
    assert job.status == JobStatus.SENT and job.site == "LCG.PIC.es"


def test_a_task_no_nucleus_can_take_is_pending_for_30_minutes_then_retried(panda, erin):
    Storage.objects.filter(nucleus__isnull=False).update(space_free=0.0, space_expired=0.0)
    task = Task.objects.get(pk=submit(erin).data["id"])
    task_brokerage(rng=random.Random(1))
    task.refresh_from_db()
    assert task.status == TaskStatus.PENDING and task.nucleus is None
    assert abs(task.retry_after - (clock.now() + timedelta(minutes=30))) < timedelta(seconds=30)
    assert BrokerageRun.objects.get(task=task).removed_by == {"space": 2}

    Storage.objects.filter(nucleus__isnull=False).update(space_free=900_000.0)
    clock.advance(29.5 * 60)
    assert task_brokerage(rng=random.Random(1))["tasks"] == 0
    clock.advance(60)
    assert task_brokerage(rng=random.Random(1))["assigned"] == 1
    task.refresh_from_db()
    assert task.status == TaskStatus.READY and task.nucleus is not None


def test_jobs_no_queue_can_take_leave_the_task_pending_for_an_hour(panda, erin):
    task = Task.objects.get(pk=submit(erin, ram_count=100_000).data["id"])
    task_brokerage(rng=random.Random(1))
    result = job_brokerage(rng=random.Random(1))
    assert result == {"tasks": 1, "brokered": 0, "pending": 1, "jobs": 0}
    task.refresh_from_db()
    assert task.status == TaskStatus.PENDING
    assert abs(task.retry_after - (clock.now() + timedelta(hours=1))) < timedelta(seconds=30)
    assert Job.objects.filter(status=JobStatus.DEFINED).count() == 3
    clock.advance(59.5 * 60)
    assert job_brokerage()["tasks"] == 0
    clock.advance(60)
    assert job_brokerage()["tasks"] == 1


def test_queue_counts_come_from_our_jobs(panda, erin):
    task = Task.objects.get(pk=submit(erin, processing_type="evgen", n_jobs=4).data["id"])
    task_brokerage(rng=random.Random(1))
    job_brokerage(rng=random.Random(1))
    counts = queue_counts()
    activated = sum(c.get("activated", 0) for c in counts.values())
    assert activated == 4
    qids = set(TaskJob.objects.filter(task=task).values_list("queue_id", flat=True))
    assert all(counts[q]["activated"] > 0 for q in qids)


def test_the_gshare_disk_threshold_is_a_gdpconfig_family_member(panda, erin, api, users):
    admin = api(users["admin"])
    r = admin.patch("/api/v1/config/DISK_THRESHOLD_Express/", {"value": 5000}, format="json")
    assert r.status_code == 200, r.content
    r = admin.patch("/api/v1/config/DISK_THRESHOLD_Express/", {"value": -1}, format="json")
    assert r.status_code == 400 and "value" in r.data
    r = admin.patch("/api/v1/config/DISK_THRESHOLD_Express/", {"value": "lots"}, format="json")
    assert r.status_code == 400
    assert gdpconfig.family_value("DISK_THRESHOLD_<gshare>", "Express") == 5000
    # Staff put a task in the Express share (a user's task gets the system's).
    GlobalShare.objects.create(name="Express", target_pct=5.0)
    users["admin"].grid_groups.add(GridGroup.objects.get(name="lhcb_mc"))
    task = Task.objects.get(pk=submit(admin, gshare="Express").data["id"])
    task_brokerage(rng=random.Random(1))
    task.refresh_from_db()
    assert task.status == TaskStatus.PENDING  # 5000 TB is more than any demo nucleus has
    assert set(BrokerageRun.objects.get(task=task).removed_by) == {"space"}
    names = {p["name"] for p in admin.get("/api/v1/config/").data}
    assert "DISK_THRESHOLD_Express" in names and "DISK_THRESHOLD_<gshare>" not in names


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"architecture": "#&nvidia:vram>>40"}, "architecture"),
        ({"architecture": '{"gpu_spec": {"colour": "red"}}'}, "architecture"),
        ({"architecture": "#&nvidia:model=([A100"}, "architecture"),
        ({"release": "24.0.30"}, "release"),
        ({"ip_connectivity": "wifi#IPv4"}, "ip_connectivity"),
        ({"full_chain": "sometimes"}, "full_chain"),
        ({"inputs": [{"dataset": "no.such.dataset"}]}, "inputs"),
        ({"owner_group": "lhcb_data"}, "owner_group"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"colour": "red"}, "colour"),
        ({"nucleus": "NOWHERE"}, "nucleus"),
    ],
)
def test_a_bad_task_is_refused_naming_the_field_and_nothing_is_stored(panda, erin, fields, field):
    r = submit(erin, **fields)
    assert r.status_code == 400, r.content
    assert field in r.data, r.data
    assert not Task.objects.exists() and not Job.objects.exists()


def test_a_task_and_its_trace_are_visible_to_its_owner_and_staff_only(panda, erin, api, users):
    task_id = submit(erin).data["id"]
    task_brokerage(rng=random.Random(1))
    assert erin.get(f"{URL}{task_id}/brokerage/").status_code == 200
    assert api(users["admin"]).get(f"{URL}{task_id}/").status_code == 200
    assert api(users["alice"]).get(f"{URL}{task_id}/").status_code == 404
    assert api(users["alice"]).get("/api/v1/brokerage-runs/").data["results"] == []
    assert api(None).get(URL).status_code in (401, 403)


def test_only_staff_edit_the_topology_through_the_api(panda, api, users):
    q = PandaQueue.objects.get(name="PIC_MCORE")
    url = f"/api/v1/panda-queues/{q.pk}/"
    assert api(users["alice"]).patch(url, {"status": "offline"}, format="json").status_code == 403
    r = api(users["admin"]).patch(url, {"status": "offline"}, format="json")
    assert r.status_code == 200 and PandaQueue.objects.get(pk=q.pk).status == "offline"
    r = api(users["admin"]).patch(url, {"core_count": -1}, format="json")
    assert r.status_code == 400 and "core_count" in r.data


def test_a_bad_topology_import_names_the_entry_and_writes_nothing(world):
    data = demo.topology()
    data["queues"][3]["site"] = "LCG.NOWHERE.xx"
    with pytest.raises(TopologyError) as err:
        import_topology(data)
    assert err.value.where == "queues[3].site"
    assert not PandaQueue.objects.exists() and not Storage.objects.exists()
    data = demo.topology()
    data["storages"][0]["space_free"] = -5
    with pytest.raises(TopologyError, match=r"storages\[0\]\.space_free"):
        import_topology(data)


def test_the_brokerage_pages_show_the_trace_with_its_charts(panda, erin, client, users):
    task_id = submit(erin, processing_type="evgen").data["id"]
    run_cycle("task_brokerage")
    run_cycle("job_brokerage")
    client.force_login(users["erin"])
    page = client.get(f"/brokerage/tasks/{task_id}/").content.decode()
    assert 'id="removed-chart"' in page and 'id="weights-chart"' in page
    assert "core_count" in page and "chosen" in page
    for url in ("/brokerage/tasks/", "/brokerage/queues/", "/brokerage/nuclei/"):
        assert client.get(url).status_code == 200
    nucleus = Task.objects.get(pk=task_id).nucleus
    page = client.get(f"/brokerage/nuclei/{nucleus.pk}/").content.decode()
    assert "throughput 1d" in page  # the network weight is shown per link


def test_the_task_form_submits_and_shows_field_errors(panda, client, users):
    client.force_login(users["erin"])
    form = {
        "name": "f",
        "owner_group": "lhcb_mc",
        "processing_type": "simul",
        "core_count": 1,
        "ram_count": 1000,
        "cpu_time": 10,
        "n_jobs": 2,
        "n_events_per_job": 10,
        "architecture": "#&nvidia:vram>>1",
    }
    r = client.post("/brokerage/tasks/submit/", form)
    assert r.status_code == 200 and "not a version number" in r.content.decode()
    assert not Task.objects.exists()
    form["architecture"] = ""
    r = client.post("/brokerage/tasks/submit/", form)
    assert r.status_code == 302
    assert Task.objects.get().n_jobs == 2
