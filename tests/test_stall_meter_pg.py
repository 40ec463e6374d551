"""The stall meter (bench/stalls.py) sees a write held up: a lock held on purpose on the row its
writer heartbeats shows as a stall at least that long. Behaviour, not speed: the lock is held
for 0.5 s, and the write that waited for it cannot have taken less."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.db import transaction

pytestmark = pytest.mark.django_db(transaction=True)

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def stalls(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import stalls as module

    return module


def test_a_lock_held_half_a_second_on_the_writers_job_shows_as_a_stall_of_at_least_that(
    stalls, submit
):
    from matcher.models import Job

    submit("alice")  # the one waiting job: the writer claims it, then heartbeats it

    def hold_its_row():
        with transaction.atomic():
            Job.objects.select_for_update().get(pk=held)
            time.sleep(0.5)

    with stalls.StallMeter() as meter:
        held = meter.wait_for_job()
        window, _ = meter.window(hold_its_row)

    assert window.max_ms >= 400
    assert window.slowest() == "heartbeat"
    assert Job.objects.get(pk=held).status == "running", "claimed and reported running"


def test_the_writer_claims_moves_and_finishes_jobs_through_the_services(stalls, submit):
    from matcher.models import Job, JobStatusHistory

    ids = [submit("alice").pk for _ in range(2)]

    with stalls.StallMeter() as meter:
        meter.wait_for_job()
        deadline = time.monotonic() + 30
        while not Job.objects.filter(pk__in=ids, status="finished").exists():
            assert time.monotonic() < deadline, "the writer finished no job"
            time.sleep(0.02)
        window, _ = meter.window(lambda: time.sleep(0.1))

    assert sorted(Job.objects.filter(pk__in=ids).values_list("status", flat=True)) == [
        "finished",
        "running",
    ]
    moves = set(JobStatusHistory.objects.filter(job_id__in=ids).values_list("to_status", flat=True))
    assert {"running", "finished"} <= moves
    assert "heartbeat" in {kind for kind, _ in window.writes}, "it keeps writing the job it holds"
