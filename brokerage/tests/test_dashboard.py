"""The home dashboard: jobs by state over time, shares, pilots per site, the last run of every
cycle, recent timeouts and brokerage failures, each linking to its page."""

import random

from brokerage.models import Storage
from brokerage.services.production import task_brokerage
from brokerage.topology_import import import_topology
from core.cycles import run_cycle
from matcher.models import JobStateSample, JobStatus, JobStatusHistory
from simulation import demo as pilot_demo
from simulation import panda_demo as demo
from timeouts.models import TimeoutAction


def test_the_home_page_shows_the_grid_at_work(world, submit, users, api, client):
    import_topology(demo.topology())
    Storage.objects.filter(nucleus__isnull=False).update(space_free=0.0)
    r = api(users["erin"]).post(
        "/api/v1/tasks/", {"name": "stuck", "owner_group": "lhcb_mc"}, format="json"
    )
    assert r.status_code == 201
    task_brokerage(rng=random.Random(1))  # no nucleus: a brokerage failure
    job = submit("alice", cpu_time=100)
    # What the timeouts cycle writes for a move: the job's history and the action's row, which
    # the home page reads.
    JobStatusHistory.objects.create(
        job=job,
        at=job.created,
        from_status="sent",
        to_status=JobStatus.ACTIVATED,
        reason="timeout: sent 30 min",
    )
    TimeoutAction.objects.create(
        at=job.created,
        rule="sent",
        job=job,
        from_status="sent",
        to_status=JobStatus.ACTIVATED,
        reason="timeout: sent 30 min",
    )
    pilot_demo.first_pilots()
    assert run_cycle("usage_sampling").status == "success"
    assert run_cycle("priorities").status == "success"
    sample = JobStateSample.objects.last()
    assert sample.counts.get("defined") == 1 and sum(sample.counts.values()) == 2

    client.force_login(users["admin"])
    html = client.get("/").content.decode()
    for chart in ("states-chart", "pilots-chart"):
        assert f'id="{chart}"' in html, chart
    assert 'href="/config/cycles/?kind=usage_sampling"' in html
    assert 'href="/config/cycles/?kind=priorities"' in html
    assert "timeout: sent 30 min" in html and f'href="/jobs/{job.pk}/"' in html
    assert "Recent brokerage failures" in html and "stuck" in html
    # A user sees only the failures of tasks they may see.
    client.force_login(users["bob"])
    html = client.get("/").content.decode()
    assert "stuck" not in html and "timeout: sent 30 min" not in html
