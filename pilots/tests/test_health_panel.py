"""The demo's own director sends pilots (no blocker of its own configuration), and what does
block pilots shows on the home page's health panel, each alert linking to the director's
decisions."""

import random
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db.models import Sum

from core import clock, gdpconfig
from core.cycles import run_cycle
from matcher.models import ComputingElement, Job
from pilots import director
from pilots.models import Credential, DirectorDecision, Pilot
from simulation import demo
from web.matcher import health

BLOCKING_TEXTS = ("unknown submit pool", "no credential", "is full", "list-match")


def test_the_demo_worlds_director_sends_pilots_and_none_of_its_decisions_is_blocked(db):
    call_command("demo")  # 3,000 jobs, the first director cycle, the simulated CEs' first steps
    decisions = list(DirectorDecision.objects.all())
    # Every waiting slot of the demo's CEs (a short queue each, simulation.demo) takes a pilot.
    queues = ComputingElement.objects.aggregate(n=Sum("max_waiting_pilots"))["n"]
    assert queues == 7 * demo.WAITING_PILOTS_PER_CE
    assert Pilot.objects.count() == queues
    # The living grid's settings (simulation.demo.living_grid_parameters), so that it reaches its
    # shares within a simulated day (bench/demo_shares.py).
    assert gdpconfig.get("MatchCPUSegmentPrecedence") is False
    assert gdpconfig.get("PilotsPerJobTerm") is False
    assert gdpconfig.get("SimulatedPilotSeconds")["CPUScale"] == 0.1
    assert Job.objects.filter(status="running").exists()
    blocked = [d.skipped for d in decisions if any(t in d.skipped for t in BLOCKING_TEXTS)]
    assert blocked == []
    assert all(director.blocker(d.skipped) is None for d in decisions)


def test_the_simulated_grid_submits_only_jobs_some_active_ce_can_take(world):
    from simulation import services as simulation
    from web.matcher.selectors import job_warnings

    simulation.arrive_jobs(random.Random(7), 300)
    jobs = list(Job.objects.filter(name="sim"))
    assert len(jobs) == 300
    unrunnable = {j.pk: w for j, w in zip(jobs, job_warnings(jobs).values(), strict=True) if w}
    assert unrunnable == {}


def test_the_simulated_vo_renews_credentials_before_the_director_stops_using_them(world):
    from simulation import services as simulation

    Credential.objects.update(expires=clock.now() + timedelta(days=3))
    renewed = simulation.renew_credentials(clock.now())
    assert renewed == Credential.objects.count()
    left = min(c.expires for c in Credential.objects.all()) - clock.now()
    assert left > timedelta(days=gdpconfig.get("PilotProxyMinDays"))


@pytest.fixture
def blocked(submit):
    """A TaskQueue whose jobs name a submit pool that does not exist, after a director cycle."""
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    job = submit("alice", cpu_time=100, submit_pools=["gridPool"])
    fine = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    run_cycle("director", rng=random.Random(3))
    return job, fine


def test_a_blocked_taskqueue_is_an_alert_linking_to_its_decisions(blocked, client, users):
    job, fine = blocked
    client.force_login(users["alice"])
    page = client.get("/").content.decode()
    assert 'id="health"' in page
    link = f'href="/pilots/director/?task_queue={job.task_queue_id}"'
    assert link in page and "gets no pilot: unknown submit pool &#x27;gridPool&#x27;" in page
    assert f"?task_queue={fine.task_queue_id}" not in page  # it got its pilots
    decisions = client.get(f"/pilots/director/?task_queue={job.task_queue_id}").content.decode()
    assert f"TQ {job.task_queue_id} in the last" in decisions
    assert "unknown submit pool &#x27;gridPool&#x27;" in decisions


def test_another_users_blocked_taskqueue_is_not_shown(blocked, client, users):
    client.force_login(users["bob"])
    page = client.get("/").content.decode()
    assert f"?task_queue={blocked[0].task_queue_id}" not in page


def test_missing_and_expiring_credentials_are_alerts(world, submit, users):
    submit("bob", cpu_time=100)
    Credential.objects.filter(group__name="lhcb_pilot").delete()
    Credential.objects.filter(dn=users["bob"].dn).update(expires=clock.now() + timedelta(days=2))
    texts = [t for t, _ in health.health_panel(users["admin"])["rows"]]
    assert any(t.startswith("No credential for generic pilots") for t in texts), texts
    assert any("CN=bob as lhcb_user has 2.0 days left" in t for t in texts), texts
    Credential.objects.filter(dn=users["bob"].dn).update(expires=clock.now() + timedelta(days=8))
    texts = [t for t, _ in health.health_panel(users["admin"])["rows"]]
    assert any("CN=bob as lhcb_user runs out in 8.0 days" in t for t in texts), texts


def test_a_full_submit_pool_is_an_alert(world, users):
    from core.models import CycleRun

    now = clock.now()
    run = CycleRun.objects.create(kind="director", started=now, status="success")
    note = f"submit pool gLite {director.POOL_FULL}"
    DirectorDecision.objects.bulk_create(
        DirectorDecision(
            cycle_run=run.pk,
            at=now,
            task_queue_id=i,
            priority=1,
            jobs=1,
            cpu_time=500,
            lam=1,
            drawn=1,
            cap=5,
            waiting_pilots=0,
            skipped=note,
        )
        for i in (1, 2, 3)
    )
    rows = health.health_panel(users["alice"])["rows"]
    assert rows[0] == (
        "Submit pool gLite was full in the last director cycle: 3 TaskQueues got no pilot "
        "(totalThreadsInPool = 40)",
        "/pilots/director/",
    )


def test_a_healthy_grid_says_so(world, submit, users, client):
    submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    run_cycle("director", rng=random.Random(1))
    client.force_login(users["alice"])
    page = client.get("/").content.decode()
    assert "Nothing blocks the grid" in page
