"""The demo's waiting jobs are made like the simulator's (docs/user-guide.md, The demo world): the
jobs that wait
when `make run` starts ask for what the arriving jobs ask for and run as long, and the demo's
corrector remembers hours, not the seed's week."""

import pytest
from django.core.management import call_command

from matcher import bulk
from matcher.models import Job
from shares.corrections import parse_instances
from simulation import demo
from simulation import demo as pilot_demo
from simulation.services import CPU_TIMES, DEMO_SITES


def test_the_demos_waiting_jobs_ask_for_what_the_simulators_ask_for(db):
    call_command("demo", "--jobs", "400", "--pilots", "0")
    jobs = Job.objects.exclude(owner__username=demo.EXAMPLE_USER)
    assert jobs.count() == 400
    assert set(jobs.values_list("cpu_time", flat=True)) <= set(CPU_TIMES)
    restricted = 0
    for job in jobs:
        for field in ("banned_sites", "grid_ces", "platforms", "tags", "pilot_types"):
            assert getattr(job, field) == [], (job.pk, field)
        assert job.submit_pools == []
        assert set(job.sites) <= set(DEMO_SITES) and len(job.sites) <= 3
        restricted += bool(job.sites)
    assert 0 < restricted < 400
    assert Job.objects.filter(owner__username=demo.EXAMPLE_USER).count() == 1  # the user guide's


def test_the_site_test_that_no_director_pilot_serves_takes_no_cut_of_lhcb_users_share(db):
    """tester's example job waits for a hand-started pilot: in its own small group, not as one
    of lhcb_user's users, each of whom gets an equal cut of the group's priority."""
    from web.shares.overview import overview

    call_command("demo", "--jobs", "100", "--pilots", "0")
    example = Job.objects.get(owner__username=demo.EXAMPLE_USER)
    assert example.owner_group.name == "lhcb_test"
    rows = {r["group"].name: r for r in overview()["rows"]}
    assert demo.EXAMPLE_USER not in {u["user"].username for u in rows["lhcb_user"]["users"]}
    assert rows["lhcb_test"]["expected"] < 0.01 < rows["lhcb_user"]["expected"]


def test_load_jobs_draws_cpu_times_among_the_given_ones_within_each_templates_reach(world):
    templates = pilot_demo.job_templates(3)
    for t in templates:
        t.top_segment = 1  # up to 5,000 s: none of the longer CPU times
    bulk.load_jobs(200, seed=4, batch_size=100, templates=templates, cpu_times=[300, 3600, 40000])
    assert set(Job.objects.values_list("cpu_time", flat=True)) == {300, 3600}
    for job in Job.objects.all():
        assert job.task_queue.cpu_time == (500 if job.cpu_time == 300 else 5000)
    with pytest.raises(bulk.LoadError):
        bulk.load_jobs(1, templates=templates, cpu_times=[300], segment=500)


def test_the_demos_corrector_is_the_seeds_with_hours_for_its_week(db):
    history = pilot_demo.living_grid_parameters()["WMSHistory"]
    assert [i.name for i in parse_instances(history)] == ["GroupsInstance", "lhcb_userInstance"]
    for body in history.values():
        assert body["RecentSlice"]["TimeSpan"] == pilot_demo.DEMO_HISTORY_SECONDS == 6 * 3600
        assert body["HourSlice"]["TimeSpan"] == 3600
        assert "WeekSlice" not in body
