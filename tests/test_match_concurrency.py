"""Several matcher processes claiming at once: never one job to two pilots, no job lost
(4 processes, 20,000 claims)."""

import multiprocessing
import random

import pytest
from django.db import connection

from tests._invariants import assert_job_invariants

ctx = multiprocessing.get_context("spawn")


def _claim_until_empty(db_name, worker, out):
    import django
    from django.conf import settings

    django.setup()
    settings.DATABASES["default"]["NAME"] = db_name
    from django.db import connections

    from matcher.dispatcher import match_job
    from matcher.matching import Resource

    # A resource that takes everything: every rule's wildcard.
    resource = Resource(
        site="any",
        grid_ce="any",
        setup="any",
        cpu_time=10**7,
        platforms=frozenset({"any"}),
        tags=frozenset({"any"}),
        pilot_type="any",
    )
    claimed = []
    try:
        while True:
            m = match_job(resource, f"pilot-{worker}")
            if m is None:
                break
            claimed.append(m.job.id)
    finally:
        connections.close_all()
    out.put((worker, claimed))


def _run(db_name, workers=4):
    out = ctx.Queue()
    procs = [ctx.Process(target=_claim_until_empty, args=(db_name, w, out)) for w in range(workers)]
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * workers
    return [job for _, jobs in results for job in jobs], [len(jobs) for _, jobs in results]


def _check(submitted: set[int], claimed: list[int]):
    from matcher.models import Job, JobStatus, TaskQueueJob

    assert len(claimed) == len(set(claimed)), "a job went to two pilots"
    waiting = set(Job.objects.filter(status=JobStatus.ACTIVATED).values_list("pk", flat=True))
    assert waiting == set(), "jobs were left behind"
    assert set(claimed) | waiting == submitted, "a job was lost"
    sent = dict(Job.objects.filter(status=JobStatus.SENT).values_list("pk", "pilot_reference"))
    assert set(sent) == set(claimed)
    assert not TaskQueueJob.objects.exists()
    assert_job_invariants()


@pytest.mark.django_db(transaction=True)
def test_four_postgresql_matchers_make_20000_claims_without_duplicates_or_losses(world):
    from matcher import bulk
    from matcher.models import Job

    # A generic pilot never takes private-only TaskQueues: none here, so every job is takeable.
    templates = bulk.make_templates(random.Random(4))
    for t in templates:
        t.requirements["pilot_types"] = []
    bulk.load_jobs(20_000, seed=4, batch_size=5_000, templates=templates)
    submitted = set(Job.objects.values_list("pk", flat=True))
    claimed, per_worker = _run(connection.settings_dict["NAME"])
    assert len(claimed) == 20_000
    assert min(per_worker) > 0, per_worker  # all four took part
    _check(submitted, claimed)
