"""Bulk loading of activated jobs with their TaskQueues, for the demo and for scale work.

Jobs are generated from a few dozen requirement templates (so that they fall into a realistic
number of TaskQueues), then written batch by batch, each batch one transaction holding the
jobs, their TaskQueue memberships and their first status-history row: a load stopped mid-way
leaves only whole jobs. PostgreSQL gets COPY; SQLite gets executemany, its writes serialised.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection, transaction

from config import clock, gdpconfig
from matcher import taskqueues
from matcher.models import ComputingElement, Job, JobStatus, JobStatusHistory, Site, TaskQueueJob
from matcher.services import taskqueues_for
from shares.models import User

JOB_COLUMNS = [
    "id",
    "owner_id",
    "owner_group_id",
    "name",
    "setup",
    "cpu_time",
    "sites",
    "banned_sites",
    "grid_ces",
    "platforms",
    "submit_pools",
    "pilot_types",
    "grid_middlewares",
    "tags",
    "user_priority",
    "status",
    "status_reason",
    "task_queue_id",
    "site",
    "jdl",
    "reschedule_count",
    "created",
    "status_changed",
]
MEMBER_COLUMNS = ["job_id", "task_queue_id", "user_priority"]
HISTORY_COLUMNS = ["job_id", "at", "from_status", "to_status", "reason"]

PLATFORMS = ["x86_64-el9", "x86_64-centos7", "aarch64-el9"]
TAGS = ["MultiProcessor", "4Processors", "8Processors", "16GB", "GPU"]
JOB_KINDS = ["mc-sim", "reco", "stripping", "user-ana", "merge", "test"]


@dataclass
class Template:
    owner_id: int
    owner_group_id: int
    setup: str
    requirements: dict
    kind: str


@dataclass
class LoadResult:
    jobs: int
    taskqueues: int
    seconds: float

    @property
    def rows_per_s(self) -> float:
        return self.jobs / self.seconds if self.seconds else 0.0


class LoadError(RuntimeError):
    pass


def make_templates(rng: random.Random, count: int = 60) -> list[Template]:
    owners = list(
        User.grid_groups.through.objects.filter(gridgroup__generic_pilot=False).values_list(
            "user_id", "gridgroup_id"
        )
    )
    if not owners:
        raise LoadError("no user belongs to a group: run `manage.py demo` first")
    sites = list(Site.objects.values_list("name", flat=True))
    ces = list(ComputingElement.objects.values_list("name", "site__name"))
    setup = gdpconfig.get("DefaultSetup")
    templates = []
    for _ in range(count):
        owner_id, group_id = rng.choice(owners)
        req: dict = {f: [] for f in taskqueues.MULTI_VALUED_FIELDS}
        if sites and rng.random() < 0.55:
            req["sites"] = rng.sample(sites, k=rng.randint(1, min(3, len(sites))))
        if sites and rng.random() < 0.1:
            req["banned_sites"] = [rng.choice([s for s in sites if s not in req["sites"]] or sites)]
        if ces and rng.random() < 0.05:
            name, site = rng.choice(ces)
            req["grid_ces"], req["sites"] = [name], [site]
        if rng.random() < 0.6:
            req["platforms"] = [rng.choice(PLATFORMS)]
        if rng.random() < 0.25:
            req["tags"] = rng.sample(TAGS, k=rng.randint(1, 2))
        if rng.random() < 0.05:
            req["pilot_types"] = ["private"]
        if rng.random() < 0.2:
            req["submit_pools"] = ["gridPool"]
        templates.append(Template(owner_id, group_id, setup, req, rng.choice(JOB_KINDS)))
    return templates


def _cpu_time(rng: random.Random, segments: list[int]) -> int:
    # Spread over the segments: pick one, then a time inside it.
    i = rng.randrange(len(segments))
    low = segments[i - 1] + 1 if i else 1
    return rng.randint(low, segments[i])


def _copy(cursor, table: str, columns: list[str], rows: list[tuple]) -> None:
    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    with cursor.cursor.copy(sql) as cp:
        for row in rows:
            cp.write_row(row)


def _reserve_ids(cursor, n: int) -> list[int]:
    if connection.vendor == "postgresql":
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence('matcher_job', 'id'))"
            " FROM generate_series(1, %s)",
            [n],
        )
        return [r[0] for r in cursor.fetchall()]
    # SQLite: the IMMEDIATE transaction holds the write lock, so max(id) is ours to extend.
    cursor.execute("SELECT COALESCE(MAX(id), 0) FROM matcher_job")
    start = cursor.fetchone()[0] + 1
    return list(range(start, start + n))


def _insert(cursor, table: str, columns: list[str], rows: list[tuple]) -> None:
    if connection.vendor == "postgresql":
        _copy(cursor, table, columns, rows)
        return
    marks = ", ".join(["%s"] * len(columns))
    cursor.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def load_jobs(
    n: int,
    seed: int = 1,
    batch_size: int = 50_000,
    progress: Callable[[int, int], None] | None = None,
    templates: list[Template] | None = None,
) -> LoadResult:
    """Insert `n` activated jobs into their TaskQueues; returns counts and elapsed seconds."""
    if n < 0:
        raise LoadError("the number of jobs must not be negative")
    started = time.perf_counter()
    rng = random.Random(seed)
    templates = templates or make_templates(rng)
    segments = gdpconfig.get("CPUSegments")
    tq_ids: dict[tuple[int, int], int] = {}
    with transaction.atomic():
        keys, defs = [], []
        for ti, t in enumerate(templates):
            for seg in segments:
                keys.append((ti, seg))
                defs.append(
                    taskqueues.definition(
                        t.owner_id, t.owner_group_id, t.setup, seg, t.requirements, segments
                    )
                )
        for key, tq in zip(keys, taskqueues_for(defs), strict=True):
            tq_ids[key] = tq.pk
    used_tqs: set[int] = set()
    done = 0
    job_table = Job._meta.db_table
    while done < n:
        size = min(batch_size, n - done)
        now = clock.now()
        with transaction.atomic(), connection.cursor() as cur:
            ids = _reserve_ids(cur, size)
            jobs, members, history = [], [], []
            for job_id in ids:
                ti = rng.randrange(len(templates))
                t = templates[ti]
                cpu = _cpu_time(rng, segments)
                tq = tq_ids[(ti, taskqueues.cpu_segment(cpu, segments))]
                used_tqs.add(tq)
                prio = rng.choice((1, 1, 1, 2, 3, 5, 8))
                r = t.requirements
                jobs.append(
                    (
                        job_id,
                        t.owner_id,
                        t.owner_group_id,
                        f"{t.kind}-{job_id:07d}",
                        t.setup,
                        cpu,
                        json.dumps(r["sites"]),
                        json.dumps(r["banned_sites"]),
                        json.dumps(r["grid_ces"]),
                        json.dumps(r["platforms"]),
                        json.dumps(r["submit_pools"]),
                        json.dumps(r["pilot_types"]),
                        json.dumps(r["grid_middlewares"]),
                        json.dumps(r["tags"]),
                        prio,
                        JobStatus.ACTIVATED.value,
                        "waiting in TaskQueue",
                        tq,
                        "",
                        "",
                        0,
                        now,
                        now,
                    )
                )
                members.append((job_id, tq, prio))
                history.append(
                    (job_id, now, "", JobStatus.ACTIVATED.value, f"loaded; joined TaskQueue {tq}")
                )
            _insert(cur, job_table, JOB_COLUMNS, jobs)
            _insert(cur, TaskQueueJob._meta.db_table, MEMBER_COLUMNS, members)
            _insert(cur, JobStatusHistory._meta.db_table, HISTORY_COLUMNS, history)
        done += size
        if progress:
            progress(done, n)
    # Template TaskQueues that drew no job would stay empty: drop them.
    from matcher.services import drop_empty_taskqueues

    drop_empty_taskqueues(set(tq_ids.values()) - used_tqs)
    return LoadResult(jobs=n, taskqueues=len(used_tqs), seconds=time.perf_counter() - started)
