"""Two clocks, never confused: the grid stamps jobs on its clock, which the simulated grid runs 60
times faster than real time (what the timeouts and shares read); the pages and the API say how
long ago on the reader's watch, label the simulated times as such, and give a job's waiting and
running in real seconds."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from core import clock
from core.models import SimulationClock
from matcher.models import Job, JobStatusHistory


@pytest.fixture
def sixty_times(db, settings):
    """The simulated clock, running at 60x since a real hour ago."""
    settings.SIMULATED_CLOCK = True
    real = timezone.now()
    SimulationClock.objects.create(
        pk=1, running=True, speed=60, anchor_real=real - timedelta(hours=1), anchor_sim=real
    )
    clock.invalidate()
    yield
    clock.invalidate()


def real_minutes_ago(minutes: float):
    """The grid clock's reading that many real minutes ago (at 60x: as many simulated hours)."""
    return clock.now() - timedelta(minutes=minutes * clock.speed())


@pytest.fixture
def job_of_seven_real_minutes(sixty_times, submit):
    """alice's job, submitted 7 real minutes ago: it waited 2, ran 3, has finished 2 ago."""
    job = submit("alice", cpu_time=100)
    submitted = real_minutes_ago(7)
    Job.objects.filter(pk=job.pk).update(
        created=submitted, status="finished", status_changed=real_minutes_ago(2)
    )
    JobStatusHistory.objects.filter(job=job).update(at=submitted)
    for minutes, before, after in ((5, "activated", "running"), (2, "running", "finished")):
        JobStatusHistory.objects.create(
            job=job, at=real_minutes_ago(minutes), from_status=before, to_status=after
        )
    return job


def test_a_job_submitted_seven_real_minutes_ago_reads_seven_minutes_ago_labelled_sim(
    job_of_seven_real_minutes, client, users
):
    client.force_login(users["alice"])
    page = client.get(f"/jobs/{job_of_seven_real_minutes.pk}/").content.decode()
    submitted = page[page.index("<dt>Submitted</dt>") : page.index("<dt>Waited</dt>")]
    assert '<abbr class="sim-label"' in submitted  # the time itself: simulated
    assert '<span class="ago" title="real time">7 min ago</span>' in submitted
    assert 'title="on the simulated clock: 7 h ago"' in submitted  # that clock's "ago", named
    listing = client.get("/jobs/").content.decode()
    assert '<span class="ago" title="real time">7 min ago</span>' in listing
    assert ">7 h ago<" not in listing


def test_a_jobs_waiting_and_running_are_shown_in_real_seconds(
    job_of_seven_real_minutes, client, users
):
    client.force_login(users["alice"])
    page = client.get(f"/jobs/{job_of_seven_real_minutes.pk}/").content.decode()
    assert '<dd id="waited" title="real time: not yet matched to a pilot">2 min</dd>' in page
    assert '<dd id="ran" title="real time: its pilot at work on it">3 min</dd>' in page


def test_the_api_gives_a_jobs_times_on_the_wall_clock_and_its_durations_in_real_seconds(
    job_of_seven_real_minutes, api, users
):
    body = api(users["alice"]).get(f"/api/v1/jobs/{job_of_seven_real_minutes.pk}/").json()
    assert body["clock"] == "simulated"
    assert body["waited_seconds"] == pytest.approx(120, abs=2)
    assert body["ran_seconds"] == pytest.approx(180, abs=2)
    real = timezone.now()
    created_real = parse_datetime(body["created_real"])
    assert (real - created_real).total_seconds() == pytest.approx(420, abs=3)
    assert parse_datetime(body["created"]) > real + timedelta(hours=50)  # on the fast clock
    ended = body["history"][-1]
    assert (real - parse_datetime(ended["at_real"])).total_seconds() == pytest.approx(120, abs=3)
    [listed] = api(users["alice"]).get("/api/v1/jobs/").json()["results"]
    assert listed["status_changed_real"] == body["status_changed_real"]


def test_a_waiting_job_has_waited_until_now_and_not_run(sixty_times, submit, api, users):
    job = submit("alice", cpu_time=100)
    JobStatusHistory.objects.filter(job=job).update(at=real_minutes_ago(3))
    body = api(users["alice"]).get(f"/api/v1/jobs/{job.pk}/").json()
    assert body["waited_seconds"] == pytest.approx(180, abs=2) and body["ran_seconds"] is None


def test_on_the_real_clock_the_real_times_are_the_times(submit, api, users):
    job = submit("alice", cpu_time=100)
    body = api(users["alice"]).get(f"/api/v1/jobs/{job.pk}/").json()
    assert body["clock"] == "real"
    assert body["created_real"] == body["created"]
    assert body["history"][0]["at_real"] == body["history"][0]["at"]
