"""The two ways a load is written (matcher/services/bulkload.py): in one transaction that builds
the job tables' indexes at its end, or batch by batch with the indexes kept. Both write exactly
the jobs the draws say (every column, the TaskQueue of each job's definition, its history row),
count them (per-priority counts, job counts), leave every index as it was and a grid that
matches; a load that cannot lock the tables goes batch by batch."""

from __future__ import annotations

import random

import psycopg
import pytest
from django.db import connection
from django.db.models import Count

from core import gdpconfig
from matcher import bulk, dispatcher, job_counts, taskqueues
from matcher.matching import Resource
from matcher.models import Job, JobStatusHistory, TaskQueue, TaskQueueJob, TaskQueuePriorityCount
from matcher.services import bulkload
from tests._invariants import job_invariant_violations

pytestmark = pytest.mark.django_db

FIELDS = taskqueues.MULTI_VALUED_FIELDS


def expected_jobs(n: int, seed: int, batch_size: int) -> list[tuple]:
    """The jobs a load of `n` with `seed` draws, in id order, as (owner, group, kind, setup,
    CPU time, UserPriority, requirements, CPU segment): the draws replayed."""
    rng = random.Random(seed)
    templates = bulk.make_templates(rng)
    segments = gdpconfig.get("CPUSegments")
    tops = [len(segments) if t.top_segment is None else t.top_segment + 1 for t in templates]
    tops = None if all(c == len(segments) for c in tops) else tops
    index = list(range(len(templates) * len(segments)))  # template * segments + segment
    out = []
    for start in range(0, n, batch_size):
        size = min(batch_size, n - start)
        b = bulk._draw(rng, size, len(templates), segments, index, None, tops)
        for t, cpu, prio, tq in zip(b.templates, b.cpu, b.prio, b.tqs, strict=True):
            tpl = templates[t]
            req = tuple(tuple(tpl.requirements[f]) for f in FIELDS)
            seg = segments[tq % len(segments)]
            out.append((tpl.owner_id, tpl.owner_group_id, tpl.kind, tpl.setup, cpu, prio, req, seg))
    return out


def loaded(ids: list[int]) -> list[tuple]:
    """What was written for these jobs, in the same shape, checking on the way each job's name,
    reason, dates, membership, history row and TaskQueue."""
    out = []
    members = {
        j: (tq, p)
        for j, tq, p in TaskQueueJob.objects.filter(job_id__in=ids).values_list(
            "job_id", "task_queue_id", "user_priority"
        )
    }
    history = {}
    for h in JobStatusHistory.objects.filter(job_id__in=ids):
        assert h.job_id not in history, f"job {h.job_id} has two history rows"
        history[h.job_id] = h
    tqs = {tq.pk: tq for tq in TaskQueue.objects.all()}
    for job in Job.objects.filter(pk__in=ids).order_by("pk"):
        kind, number = job.name.rsplit("-", 1)
        assert number == f"{job.pk:07d}"
        assert (job.status, job.status_reason, job.site, job.jdl) == (
            "activated",
            bulk.WAITING,
            "",
            "",
        )
        assert job.created == job.status_changed
        assert members[job.pk] == (job.task_queue_id, job.user_priority)
        h = history[job.pk]
        assert (h.at, h.from_status, h.to_status) == (job.created, "", "activated")
        assert h.reason == f"loaded; joined TaskQueue {job.task_queue_id}"
        tq = tqs[job.task_queue_id]
        assert (tq.owner_id, tq.owner_group_id, tq.setup) == (
            job.owner_id,
            job.owner_group_id,
            job.setup,
        )
        assert tq.requirements() == job.requirements()
        req = tuple(tuple(getattr(job, f)) for f in FIELDS)
        out.append(
            (
                job.owner_id,
                job.owner_group_id,
                kind,
                job.setup,
                job.cpu_time,
                job.user_priority,
                req,
                tq.cpu_time,
            )
        )
    assert len(out) == len(ids)
    return out


def new_ids(before: int) -> list[int]:
    return list(Job.objects.filter(pk__gt=before).order_by("pk").values_list("pk", flat=True))


def last_id() -> int:
    return Job.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def assert_counted() -> None:
    members = {
        (r["task_queue_id"], r["user_priority"]): r["n"]
        for r in TaskQueueJob.objects.values("task_queue_id", "user_priority").annotate(
            n=Count("*")
        )
    }
    stored = {
        (c.task_queue_id, c.user_priority): c.jobs
        for c in TaskQueuePriorityCount.objects.filter(jobs__gt=0)
    }
    assert stored == members
    table = {
        tuple(r[:-1]): r[-1]
        for r in Job.objects.order_by().values_list(*job_counts.KEYS).annotate(n=Count("*"))
    }
    assert job_counts.counts(None, job_counts.KEYS) == table
    assert job_invariant_violations() == []


def indexes() -> dict[str, str]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid), indisvalid "
            "FROM pg_index WHERE indrelid = ANY(%s::regclass[])",
            [list(bulkload.TABLES)],
        )
        rows = cur.fetchall()
    assert all(valid for *_, valid in rows)
    return {name: definition for name, definition, _ in rows}


def test_a_load_building_its_indexes_writes_the_jobs_its_draws_say_as_a_batch_load_does(world):
    n, seed, size = 260, 7, 70
    want = expected_jobs(n, seed, size)
    bulk.load_jobs(n, seed=seed, batch_size=size, bulk_build=True)
    first = loaded(new_ids(0))
    assert first == want
    before = last_id()
    bulk.load_jobs(n, seed=seed, batch_size=size, bulk_build=False)
    assert loaded(new_ids(before)) == want
    assert_counted()


def test_a_load_building_its_indexes_leaves_every_index_as_it_was_and_counts_its_jobs(world):
    was = indexes()
    assert any(name == "job_name_sort" for name in was)
    bulk.load_jobs(150, seed=2, batch_size=40, bulk_build=True)
    assert indexes() == was
    assert_counted()


def test_a_load_numbers_its_history_rows_in_the_order_of_their_jobs_and_restores_its_settings(
    world, monkeypatch
):
    firsts = {Job: 5_000_000, JobStatusHistory: 7_000_000}  # ids reserved, as outside a test
    monkeypatch.setattr(
        bulkload, "reserve_ids", lambda model, n: range(firsts[model], firsts[model] + n)
    )
    with connection.cursor() as cur:
        cur.execute("SHOW wal_compression")
        compression = cur.fetchone()[0]
    bulk.load_jobs(300, seed=6, batch_size=70, bulk_build=True)
    history = list(
        JobStatusHistory.objects.filter(id__gte=firsts[JobStatusHistory])
        .order_by("id")
        .values_list("id", "job_id")
    )
    assert history == [(firsts[JobStatusHistory] + i, firsts[Job] + i) for i in range(300)]
    with connection.cursor() as cur:
        cur.execute("SHOW wal_compression")
        assert cur.fetchone()[0] == compression


def test_the_grid_a_load_built_matches_its_jobs_and_stays_consistent(world):
    bulk.load_jobs(200, seed=4, batch_size=64, bulk_build=True)
    resource = Resource(
        site="LCG.CERN.ch",
        grid_ce="ce503.cern.ch",
        setup=gdpconfig.get("DefaultSetup"),
        cpu_time=172800,
        platforms=frozenset(bulk.PLATFORMS),
        tags=frozenset(bulk.TAGS),
    )
    matched = [dispatcher.match_job(resource, f"p-{i}") for i in range(5)]
    ids = [m.job.id for m in matched if m is not None]
    assert ids, "a grid of 200 waiting jobs gave a CERN pilot nothing"
    for job in Job.objects.filter(pk__in=ids):
        assert job.status == "sent"  # claimed, handed to the pilot
        assert not TaskQueueJob.objects.filter(job_id=job.pk).exists()
    assert_counted()


def test_a_load_turns_the_per_row_foreign_key_checks_back_on_inside_a_callers_transaction(world):
    bulk.load_jobs(30, seed=3, batch_size=10)
    with connection.cursor() as cur:
        cur.execute("SHOW session_replication_role")
        assert cur.fetchone()[0] == "origin"


def test_a_load_is_built_at_the_end_only_when_large_beside_the_table_and_in_its_own_transaction(
    world,
):
    assert not bulkload.bulk_build_wanted(bulkload.BULK_BUILD_FROM)  # inside the test's
    assert bulkload.bulk_build_wanted(5, force=True)
    assert not bulkload.bulk_build_wanted(10**7, force=False)


@pytest.mark.django_db(transaction=True)
def test_a_load_that_cannot_lock_the_job_tables_goes_batch_by_batch(monkeypatch, caplog):
    import logging

    from simulation import demo

    caplog.set_level(logging.INFO, logger="matcher.bulk")
    demo.create_world()
    monkeypatch.setattr(bulkload, "LOCK_TIMEOUT", "200ms")
    dsn = connection.settings_dict
    other = psycopg.connect(
        host=dsn["HOST"],
        port=dsn["PORT"],
        user=dsn["USER"],
        password=dsn["PASSWORD"],
        dbname=dsn["NAME"],
    )
    try:
        other.execute(f"LOCK TABLE {bulkload.HISTORY} IN ACCESS SHARE MODE")  # held, reading
        result = bulk.load_jobs(120, seed=5, batch_size=50, bulk_build=True)
    finally:
        other.close()
    assert "loading batch by batch: the job tables are busy" in caplog.text
    assert result.jobs == 120 == Job.objects.count() == JobStatusHistory.objects.count()
    assert_counted()
