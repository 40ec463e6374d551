"""Every page reads a queue's counts and limits from one place (world.queue_standing): the PanDA
queues page, the analysis page and the analysis brokerage's decision trace show the same
running and queued jobs and the same queue-length limit."""

import random

import pytest

from brokerage import analysis
from brokerage.models import BrokerageRun, PandaQueue, TaskJob
from brokerage.services.analysis import analysis_brokerage
from matcher.models import Job, JobStatus
from shares.models import GridGroup


@pytest.fixture
def crowded(panda, users):
    """110 of alice's analysis jobs queued at ANALY_CERN and 25 running there."""
    from brokerage.services.submission import submit_task

    group = GridGroup.objects.get(name="lhcb_user")
    task = submit_task(
        users["alice"],
        {"owner_group": group, "kind": "analysis", "name": "user.alice.big", "n_jobs": 135},
        [],
    )
    analysis_brokerage(rng=random.Random(1), task_ids=[task.pk])
    cern = PandaQueue.objects.get(name="ANALY_CERN")
    TaskJob.objects.filter(task=task).update(queue=cern)
    running = TaskJob.objects.filter(task=task).values_list("job_id", flat=True)[:25]
    Job.objects.filter(pk__in=list(running)).update(status=JobStatus.RUNNING, site="LCG.CERN.ch")
    return cern


def test_the_queues_page_the_analysis_page_and_the_trace_show_one_limit(crowded, users, client):
    assert analysis.queue_length_limit(25) == 50 and analysis.queue_length_limit(0) == 40
    client.force_login(users["admin"])
    [row] = [r for r in client.get("/brokerage/queues/").context["rows"] if r["queue"] == crowded]
    assert (row["running"], row["queued"], row["queue_length_limit"]) == (25, 110, 50)
    page = client.get("/brokerage/analysis/?user=bob")
    [stab] = [r for r in page.context["rows"] if r["queue"].pk == crowded.pk]
    assert (stab["nR"], stab["nQ"], stab["queue_length_limit"]) == (25, 110, 50)

    group = GridGroup.objects.get(name="lhcb_user")
    from brokerage.services.submission import submit_task

    task = submit_task(
        users["bob"], {"owner_group": group, "kind": "analysis", "name": "user.bob.t"}, []
    )
    analysis_brokerage(rng=random.Random(1), task_ids=[task.pk])
    run = BrokerageRun.objects.filter(task=task).latest("id")
    [seen] = [c for c in run.candidates if c["name"] == "ANALY_CERN"]
    assert seen["removed_by"] == "queue_length"
    assert seen["values"] == {"queued": 110, "limit": 50}


def test_a_production_queue_has_no_queue_length_limit_on_the_queues_page(panda, users, client):
    client.force_login(users["alice"])
    rows = client.get("/brokerage/queues/").context["rows"]
    limits = {r["queue"].queue_type: r["queue_length_limit"] for r in rows}
    assert limits[PandaQueue.Type.ANALYSIS] == 40 and limits[PandaQueue.Type.PRODUCTION] is None
