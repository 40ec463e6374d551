"""Retention beside live transactions, on PostgreSQL: a row another transaction holds is skipped,
never waited for, and left for a later run."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction

from retention.services import run_retention

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_finished_job_held_by_a_reschedule_under_way_is_skipped_not_waited_for(killed, age, ages):
    from matcher.models import Job

    ages(jobs=1)
    held, *others = killed(4)
    age(2)
    locked, release = threading.Event(), threading.Event()

    def reschedule_under_way():
        try:
            with transaction.atomic():
                Job.objects.select_for_update().get(pk=held)
                locked.set()
                release.wait(60)
        finally:
            connections.close_all()

    holder = threading.Thread(target=reschedule_under_way)
    holder.start()
    try:
        assert locked.wait(30)
        with connection.cursor() as cur:
            cur.execute("SET lock_timeout = '10s'")  # waiting on the row would fail the run
        tally = run_retention()
    finally:
        release.set()
        holder.join(30)
        with connection.cursor() as cur:
            cur.execute("RESET lock_timeout")

    assert tally.deleted["jobs"] == 3
    assert set(Job.objects.filter(pk__in=[held, *others]).values_list("pk", flat=True)) == {held}
    assert run_retention().deleted["jobs"] == 1, "the next run takes it"
