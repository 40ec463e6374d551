"""Job ids reserved ahead of a bulk insert (COPY cannot return the ids it made) are never handed
out twice: not to another reservation, not to a job submitted meanwhile."""

import pytest

from matcher.models import Job
from matcher.services import moves

pytestmark = pytest.mark.django_db


def test_reserved_job_ids_are_distinct_increasing_and_above_every_existing_job(submit):
    before = submit("alice")
    ids = moves.reserve_job_ids(5)
    assert ids == sorted(set(ids)) and len(ids) == 5
    assert ids[0] > before.pk
    assert moves.reserve_job_ids(0) == []


def test_a_job_submitted_after_a_reservation_gets_an_id_beyond_it(submit):
    ids = moves.reserve_job_ids(3)
    later = submit("alice")
    assert later.pk > max(ids)
    assert not Job.objects.filter(pk__in=ids).exists()  # reserved, not yet written


def test_a_second_reservation_follows_the_first(world):
    first = moves.reserve_job_ids(3)
    second = moves.reserve_job_ids(3)
    assert min(second) > max(first)
