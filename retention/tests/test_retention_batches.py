"""A day's expired jobs go in several bounded batches, each its own transaction, with their
status history; the jobs that are not expired yet stay, and a live job stays whatever its age."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core import gdpconfig
from retention.services import run_retention


@pytest.fixture
def running(submit):
    """running(username) -> the id of a job claimed by a pilot and reported running now."""
    from matcher import services
    from matcher.dispatcher import match_job
    from matcher.matching import any_resource

    def make(username: str = "alice") -> int:
        job = submit(username)
        match = match_job(any_resource(), "pilot-1")
        assert match is not None and match.job.id == job.pk
        services.report_job(job.pk, "running", "started")
        return job.pk

    return make


def test_expired_jobs_go_with_their_history_in_batches_and_the_young_and_live_jobs_stay(
    killed, running, submit, age, ages
):
    from matcher.models import Job, JobStatusHistory

    ages(jobs=7)
    gdpconfig.set_value("RetentionBatchSize", 4)
    at_work = running()  # live for the whole test: created long before the cutoff
    expired = killed(10)
    waiting = submit("bob").pk
    age(3)
    young = killed(3)
    age(5)  # the expired ones ended 8 days ago, the young ones 5
    others = [at_work, waiting, *young]
    history_of_others = JobStatusHistory.objects.filter(job_id__in=others).count()
    assert JobStatusHistory.objects.filter(job_id__in=expired).count() >= 10

    with CaptureQueriesContext(connection) as queries:
        tally = run_retention()

    assert (tally.deleted["jobs"], len(tally.batch_seconds), tally.largest_batch) == (10, 3, 4)
    assert not Job.objects.filter(pk__in=expired).exists()
    assert not JobStatusHistory.objects.filter(job_id__in=expired).exists()
    assert set(Job.objects.filter(pk__in=others).values_list("pk", flat=True)) == set(others)
    assert JobStatusHistory.objects.filter(job_id__in=others).count() == history_of_others
    assert dict(Job.objects.filter(pk__in=[at_work, waiting]).values_list("pk", "status")) == {
        at_work: "running",
        waiting: "activated",
    }
    deletes = [q for q in queries if q["sql"].startswith('DELETE FROM "matcher_job" ')]
    assert len(deletes) == 3, "one DELETE of jobs per batch"


def test_a_live_job_is_never_deleted_however_old(running, submit, age, ages):
    from matcher.dispatcher import match_job
    from matcher.matching import any_resource
    from matcher.models import Job

    ages(jobs=1)
    at_work = running()
    claimed = submit("alice").pk
    assert match_job(any_resource(), "pilot-2").job.id == claimed
    waiting = submit("bob").pk
    age(400)

    tally = run_retention()

    assert tally.deleted["jobs"] == 0
    assert dict(
        Job.objects.filter(pk__in=[at_work, claimed, waiting]).values_list("pk", "status")
    ) == {
        at_work: "running",
        claimed: "sent",
        waiting: "activated",
    }
