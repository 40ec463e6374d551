"""The timeouts page: what is about to time out, what did, and per job the rule that fired."""

import pytest
from django.test import Client

from core import clock
from matcher.models import Job
from timeouts.models import TimeoutAction
from timeouts.services import load_world, scan, scan_by_state, timeouts_cycle

from .test_timeouts import CERN, DAY, HOUR, make_task, one_job, panda  # noqa: F401


def client_for(user):
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def timed_out(make_task, submit):  # noqa: F811
    sent = one_job(make_task, "sent")  # erin's task job: fails after 30 min
    running = one_job(make_task, "running")  # heartbeat limit 2 h: approaching
    alice = submit("alice", cpu_time=1000, sites=[CERN])
    Job.objects.filter(pk=alice.pk).update(status="sent", site=CERN, status_changed=clock.now())
    clock.advance(31 * 60)
    timeouts_cycle()
    return sent, running, alice


def test_the_page_shows_both_charts_the_rules_and_the_jobs_that_timed_out(users, timed_out):
    sent, _running, alice = timed_out
    r = client_for(users["admin"]).get("/brokerage/timeouts/")
    assert r.status_code == 200
    html = r.content.decode()
    assert 'id="time-left-chart"' in html and 'id="actions-chart"' in html
    assert html.count("plotly-graph-div") == 2
    assert f'href="/jobs/{sent.pk}/"' in html and f'href="/jobs/{alice.pk}/"' in html
    assert "sent 30 min (TIMEOUT_sent)" in html
    # The running job's heartbeat runs out within the 24 h horizon: one job approaching.
    assert r.context["approaching_count"] == 1
    row = next(x for x in r.context["rules"] if x["name"] == "sent")
    assert row["acted"] == 2 and row["limit"] == "30 min (TIMEOUT_sent)"
    assert TimeoutAction.objects.count() == 2


def test_a_user_sees_only_the_actions_on_jobs_they_may_see(users, timed_out):
    sent, _running, alice = timed_out
    html = client_for(users["alice"]).get("/brokerage/timeouts/").content.decode()
    assert f'href="/jobs/{alice.pk}/"' in html
    assert f'href="/jobs/{sent.pk}/"' not in html


def test_anonymous_visitors_are_sent_to_the_login_page(db):
    r = Client().get("/brokerage/timeouts/")
    assert r.status_code == 302 and "/login/" in r["Location"]


def test_the_pages_scan_state_by_state_finds_the_jobs_the_cycles_scan_finds(make_task):  # noqa: F811
    placed = [one_job(make_task, s) for s in ("sent", "running", "activated", "holding")]
    clock.advance(3 * DAY)
    now, world = clock.now(), load_world()

    whole = {c.id: c for c in scan(world, now)}
    by_state = {c.id: c for c in scan_by_state(world, now, limit=100)}
    first = scan_by_state(world, now, limit=1)

    assert set(by_state) == set(whole) >= {j.pk for j in placed}
    assert [(c.status, c.queue_id, c.gshare) for c in by_state.values()] == [
        (whole[i].status, whole[i].queue_id, whole[i].gshare) for i in by_state
    ]
    assert len(first) == 1 and first[0].status == "activated"  # the busiest state first


def test_each_action_carries_its_jobs_owner_and_group_and_is_seen_by_whoever_sees_the_job(
    users, timed_out
):
    acted = {a.job_id: a for a in TimeoutAction.objects.all()}
    jobs = Job.objects.filter(pk__in=acted)

    for job in jobs:
        assert (acted[job.pk].owner_id, acted[job.pk].owner_group_id) == (
            job.owner_id,
            job.owner_group_id,
        )
    seen_by = {}
    for name, user in users.items():
        seen = set(TimeoutAction.objects.visible_to(user).values_list("job_id", flat=True))
        assert seen == set(jobs.visible_to(user).values_list("pk", flat=True)), name
        seen_by[name] = seen
    assert len(acted) == 2 and seen_by["admin"] == set(acted) != seen_by["alice"]
