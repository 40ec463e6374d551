"""Several matcher processes claiming at once: never one job to two pilots, no job lost.

PostgreSQL: 4 processes, 20,000 claims. SQLite: 4 processes on a file database (its writes
are serialised by BEGIN IMMEDIATE), smaller, to show the same code path is correct there.
"""

import multiprocessing
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests._invariants import assert_job_invariants

ctx = multiprocessing.get_context("spawn")
ROOT = Path(__file__).resolve().parents[1]


def _claim_until_empty(db_name, sqlite_path, worker, out):
    if sqlite_path:
        os.environ["SQLITE_PATH"] = sqlite_path
        os.environ.pop("DATABASE_URL", None)
    import django
    from django.conf import settings

    django.setup()
    if db_name:
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


def _run(db_name, sqlite_path, workers=4):
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_claim_until_empty, args=(db_name, sqlite_path, w, out))
        for w in range(workers)
    ]
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


@pytest.mark.pg
@pytest.mark.django_db(transaction=True)
def test_four_postgresql_matchers_make_20000_claims_without_duplicates_or_losses(world):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL)")
    from matcher import bulk
    from matcher.models import Job

    # A generic pilot never takes private-only TaskQueues: none here, so every job is takeable.
    templates = bulk.make_templates(random.Random(4))
    for t in templates:
        t.requirements["pilot_types"] = []
    bulk.load_jobs(20_000, seed=4, batch_size=5_000, templates=templates)
    submitted = set(Job.objects.values_list("pk", flat=True))
    claimed, per_worker = _run(connection.settings_dict["NAME"], None)
    assert len(claimed) == 20_000
    assert min(per_worker) > 0, per_worker  # all four took part
    _check(submitted, claimed)


def test_four_sqlite_matchers_on_one_file_are_correct(tmp_path):
    """Its own file database, set up by manage.py: the test database of this run is in memory."""
    db = tmp_path / "match.sqlite3"
    env = {**os.environ, "SQLITE_PATH": str(db)}
    env.pop("DATABASE_URL", None)
    python = sys.executable
    for args in (["migrate", "-v0"], ["demo", "--jobs", "600", "--pilots", "0"]):
        subprocess.run(
            [python, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True
        )
    import sqlite3

    con = sqlite3.connect(db)
    # A generic pilot never takes private-only TaskQueues: make every job takeable.
    con.execute("UPDATE matcher_taskqueue SET pilot_types = '[]'")
    con.commit()
    total = con.execute("SELECT COUNT(*) FROM matcher_job").fetchone()[0]
    assert total == 601  # and the README pilot example's job
    claimed, _ = _run(None, str(db))
    statuses = dict(con.execute("SELECT status, COUNT(*) FROM matcher_job GROUP BY status"))
    members = con.execute("SELECT COUNT(*) FROM matcher_taskqueuejob").fetchone()[0]
    sent = {r[0] for r in con.execute("SELECT id FROM matcher_job WHERE status = 'sent'")}
    con.close()
    assert len(claimed) == len(set(claimed)) == total
    assert statuses == {"sent": total} and members == 0
    assert sent == set(claimed)
