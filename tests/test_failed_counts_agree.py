"""The error summary (web/monitoring/error_summary.py), read from the failed jobs' rollup
(matcher/services/failures.py, matcher/failed_counts.py), shows what a direct count of the job
table shows, for every user and windows from an hour to a month, folded or not: after jobs fail
over several days (whole days, hours and the part of an hour at the window's start), are
rescheduled (the example job of their group moves to the next lowest), fail by a timeout rule
in bulk, are purged by retention, and after a repair by hand and a rebuild. (The page and the
API: web/monitoring/tests/test_error_summary.py.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

from brokerage.models import Task, TaskJob
from core import clock
from matcher import dispatcher, services
from matcher.matching import Resource
from matcher.models import Job, JobStatus
from matcher.services import moves, rollups
from retention import services as retention
from tests.failed_counts_check import assert_failed_agree
from web.monitoring import error_summary

pytestmark = pytest.mark.django_db

SITES = ("LCG.CERN.ch", "LCG.PIC.es", "LCG.RAL.uk")
# (user, group, error code): carol fails in a JobSharing group (lhcb_mc, which erin shares)
# and in one of her own (lhcb_user).
WHO = (
    ("alice", None, 1099),
    ("carol", "lhcb_mc", 1212),
    ("carol", "lhcb_user", None),
    ("erin", "lhcb_mc", 1305),
    ("bob", None, 1099),
)


@pytest.fixture
def simulated_clock(settings):
    settings.SIMULATED_CLOCK = True
    clock.invalidate()
    yield
    clock.invalidate()


@pytest.fixture
def run(submit):
    """run(username, group, site) -> a job a pilot at `site` holds, running: one submitted
    as `username` in `group`, or one waiting since a reschedule."""

    def make(username: str, group: str | None, site: str) -> Job:
        fields = {"cpu_time": 10}
        if group:
            fields["owner_group"] = group
        submit(username, **fields)
        # The job taken: this one, or one rescheduled before it.
        taken = dispatcher.match_job(Resource(site=site, setup="any", cpu_time=10**6), "p")
        assert taken is not None
        return services.report_job(taken.job.id, JobStatus.RUNNING, "started")

    return make


def fail(run, username, group, site, code, reason="payload failed") -> Job:
    job = run(username, group, site)
    results = {} if code is None else {"error_code": code}
    return services.report_job(job.pk, JobStatus.FAILED, reason, results=results)


def test_the_summary_agrees_with_the_job_table_as_jobs_fail_over_days_are_rescheduled_and_purged(
    simulated_clock, users, run
):
    task = Task.objects.create(
        name="mc", owner=users["erin"], owner_group=users["erin"].grid_groups.get(name="lhcb_mc"),
        status="running", created=clock.now(), modified=clock.now(),
    )  # fmt: skip
    failed = []
    for step in range(14):  # about four days, a step every 7 h 13 min
        clock.advance(7 * 3600 + 13 * 60)
        for i, (username, group, code) in enumerate(WHO):
            site = SITES[(step + i) % len(SITES)]
            reason = f"payload failed ({step % 3})"
            failed.append(fail(run, username, group, site, code, reason))
        # A task's job (a job rescheduled and failed again may be one already).
        TaskJob.objects.get_or_create(job=failed[-2], defaults={"task": task})
        if step % 4 == 3:
            # The lowest failed job of them all goes back to wait: the example of its groups.
            lowest = Job.objects.filter(status=JobStatus.FAILED).order_by("pk").first()
            services.reschedule_job(lowest.pk, users["admin"])
        if step % 5 == 4:
            rollups.fold()
    rollups.rebuild()  # the task jobs were linked by hand, after their jobs failed
    assert_failed_agree("after four days of failures and reschedules")

    # A timeout rule fails jobs in bulk (moves.move_jobs), with an error code.
    sent = [run(u, g, SITES[0]) for u, g, _code in WHO]
    with transaction.atomic():
        locked = moves.lock_jobs([j.pk for j in sent])
        by = moves.timeout_move("fail")
        steps = [
            moves.Step(j.pk, JobStatus.FAILED, "no heartbeat", by, error_code=1213) for j in sent
        ]
        moves.move_jobs(locked, steps, clock.now())
    assert_failed_agree("after a timeout rule failed jobs")

    # Retention purges the oldest failed jobs, then a run takes what its ages say.
    oldest = list(Job.objects.filter(status=JobStatus.FAILED).order_by("status_changed")[:12])
    assert sorted(services.purge_jobs([j.pk for j in oldest])) == sorted(j.pk for j in oldest)
    assert_failed_agree("after a purge")
    retention.run_retention(now=clock.now() + timedelta(days=3650))
    assert_failed_agree("after a retention run")


def test_the_example_job_of_a_group_is_its_lowest_failed_job_after_the_lowest_is_rescheduled(
    users, run
):
    jobs = [fail(run, "alice", None, "LCG.CERN.ch", 1099) for _ in range(3)]
    rollups.fold()
    [group] = error_summary.summary(users["alice"], 24).by_code
    assert (group.count, group.example_job) == (3, jobs[0].pk)

    services.reschedule_job(jobs[0].pk, users["alice"])
    rollups.fold()
    [group] = error_summary.summary(users["alice"], 24).by_code
    assert (group.count, group.example_job) == (2, jobs[1].pk)
    assert_failed_agree("after the reschedule")


def test_a_repair_by_hand_is_counted_after_a_rebuild(users, run):
    job = fail(run, "alice", None, "LCG.CERN.ch", 1099)
    rollups.fold()
    Job.objects.filter(pk=job.pk).update(
        site="LCG.PIC.es", status_changed=clock.now() - timedelta(hours=30)
    )
    assert {g.key for g in error_summary.summary(users["alice"], 24).by_site} == {"LCG.CERN.ch"}
    found = rollups.rebuild()
    assert found["failed_rows"] == 8  # a job: four kinds, an hour and a day each
    assert error_summary.summary(users["alice"], 24).total == 0
    assert {g.key for g in error_summary.summary(users["alice"], 48).by_site} == {"LCG.PIC.es"}
    assert_failed_agree("after the rebuild")
