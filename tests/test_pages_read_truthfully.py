"""What the pages say is what they show: a user's home page is theirs, refusals come in the
site's own frame, stored structures read as key/value pairs, times say which clock they are on
and how long ago, and durations are real seconds."""

import pytest

from core import clock, cycles, gdpconfig
from core.models import CycleRun, SimulationClock


def test_a_users_home_page_says_it_shows_their_jobs_and_staff_see_the_grid(client, users):
    client.force_login(users["alice"])
    html = client.get("/").content.decode()
    assert "State of the grid" not in html
    assert "Your jobs on the grid" in html and "Your TaskQueues by priority" in html
    client.force_login(users["admin"])
    html = client.get("/").content.decode()
    assert "<h1>State of the grid</h1>" in html and "Your jobs" not in html


def test_a_refusal_comes_in_the_sites_frame_with_its_navigation(client, users):
    client.force_login(users["alice"])
    r = client.get("/config/")
    assert r.status_code == 403
    html = r.content.decode()
    assert "css/gridwms" in html and "<nav>" in html and 'href="/jobs/"' in html
    assert "for staff only" in html
    missing = client.get("/jobs/999999/")
    assert missing.status_code == 404 and "<nav>" in missing.content.decode()


@pytest.fixture
def counted_cycle(db):
    @cycles.cycle("test_counts")
    def body():
        return {"jobs": 3, "per_site": {"LCG.CERN.ch": 2}, "ratio": 0.333333333}

    yield
    cycles.CYCLES.pop("test_counts")


def test_the_cycles_page_shows_counts_as_key_value_pairs(client, users, counted_cycle):
    cycles.run_cycle("test_counts")
    client.force_login(users["alice"])
    html = client.get("/config/cycles/").content.decode()
    assert "{&#x27;" not in html and "{'" not in html  # no Python dict
    assert "<dt>jobs</dt><dd>3</dd>" in html and "<dt>LCG.CERN.ch</dt><dd>2</dd>" in html
    assert "<dt>ratio</dt><dd>0.3333</dd>" in html
    assert "duration (real s)" in html


def test_the_clock_page_shows_what_each_tick_did_as_key_value_pairs(client, users):
    now = clock.now()
    CycleRun.objects.create(
        kind="simulation",
        started=now,
        finished=now,
        status="success",
        counts={"jobs": 4, "cycles": ["director:success", "priorities:success"]},
        real_seconds=1.25,
    )
    client.force_login(users["alice"])
    html = client.get("/simulation/").content.decode()
    assert "{&#x27;" not in html and "[&#x27;" not in html
    assert "<dt>jobs</dt><dd>4</dd>" in html
    assert "<dd>director:success, priorities:success</dd>" in html
    assert ">real s</th>" in html


def test_times_are_marked_simulated_while_the_simulated_clock_drives_the_pages(
    client, users, submit, settings
):
    job = submit("alice", cpu_time=100)
    gdpconfig.set_value("MaxRescheduling", 5, users["admin"], "more")
    client.force_login(users["admin"])
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'class="ago"' in html and 'class="sim-label"' not in html  # the real clock
    settings.SIMULATED_CLOCK = True
    now = clock.now()
    SimulationClock.objects.create(pk=1, running=True, speed=60, anchor_real=now, anchor_sim=now)
    clock.invalidate()
    try:
        html = client.get(f"/jobs/{job.pk}/").content.decode()
        assert 'class="sim-label"' in html and "sim 60×" in html  # each time, and the header
        config = client.get("/config/").content.decode()
        start = config.index('id="param-MaxRescheduling"')
        history = config[start : config.index("</details>", start)]
        assert 'class="ago"' in history and "sim-label" not in history  # wall-clock history
    finally:
        clock.invalidate()
