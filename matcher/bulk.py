"""Bulk loading of activated jobs with their TaskQueues, for the demo and for scale work.

Jobs are generated from a few dozen requirement templates (so that they fall into a realistic
number of TaskQueues), then written batch by batch, each batch one transaction holding the
jobs, their TaskQueue memberships and their first status-history row, written by the job
lifecycle's service (matcher.services.create_jobs): a load stopped mid-way leaves only whole
jobs. It gets COPY text made here, and two connections write batches at once while this
thread prepares the next one: most of the database's work (foreign-key checks at commit, index
updates) runs on one core per connection. The tables are analysed at the end.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction

from core import clock, db, gdpconfig
from matcher import feasibility, taskqueues
from matcher.dispatcher import ce_resources
from matcher.lifecycle import ACTIVATED
from matcher.models import ComputingElement, Site
from matcher.services import enqueue, housekeeping, moves, submission
from shares.models import User

JOB_COLUMNS = list(submission.NEW_JOB_COLUMNS)
MEMBER_COLUMNS = list(enqueue.MEMBER_COLUMNS)
HISTORY_COLUMNS = list(moves.HISTORY_COLUMNS)

PLATFORMS = ["x86_64-el9", "x86_64-centos7", "aarch64-el9"]
TAGS = ["MultiProcessor", "4Processors", "8Processors", "16GB", "GPU"]
JOB_KINDS = ["mc-sim", "reco", "stripping", "user-ana", "merge", "test"]
PRIORITIES = (1, 1, 1, 2, 3, 5, 8)
WAITING = submission.WAITING  # an activated job's status reason
JSON_FIELDS = taskqueues.MULTI_VALUED_FIELDS
LOAD_WORKERS = 2


@dataclass
class Template:
    owner_id: int
    owner_group_id: int
    setup: str
    requirements: dict
    kind: str
    # The index of the highest CPU segment some active CE takes these requirements at (None:
    # every segment); jobs are drawn in the segments up to it, so none waits for a CE that
    # does not exist.
    top_segment: int | None = None


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


def make_templates(
    rng: random.Random,
    count: int = 60,
    requirements: Callable[[random.Random], dict] | None = None,
    exclude_owners: Collection[str] = (),
) -> list[Template]:
    """`count` requirement sets, each one some active CE takes (when CEs exist), owned by the
    users of ordinary groups but those named in `exclude_owners` (the demo's hand-pilot example
    user). `requirements`: draws a template's requirements ({field: values}, the fields it
    names) instead of this module's mix of sites, platforms, tags, pilot types and submit
    pools."""
    owners = list(
        User.grid_groups.through.objects.filter(gridgroup__generic_pilot=False)
        .exclude(user__username__in=list(exclude_owners))
        .values_list("user_id", "gridgroup_id")
    )
    if not owners:
        raise LoadError("no user belongs to a group: run `manage.py demo` first")
    setup = gdpconfig.get("DefaultSetup")
    segments = gdpconfig.get("CPUSegments")
    offers = [res for _site, _ce, res in ce_resources()]
    backends = gdpconfig.get("SubmitPoolBackends")
    choices = {
        "sites": list(Site.objects.values_list("name", flat=True)),
        "ces": list(ComputingElement.objects.values_list("name", "site__name")),
        "pools": [p for p in gdpconfig.get("SubmitPools") if backends.get(p) == "simulated"],
    }
    templates = []
    for attempt in range(count * 50):
        if len(templates) == count:
            break
        owner_id, group_id = rng.choice(owners)
        if requirements is None:
            req = _requirements(rng, **choices)
        else:
            drawn = requirements(rng)
            req = {
                f: taskqueues.canonical_values(drawn.get(f, []))
                for f in taskqueues.MULTI_VALUED_FIELDS
            }
        able = [i for i, seg in enumerate(segments) if feasibility.can_run(setup, seg, req, offers)]
        if offers and not able and attempt < count * 49:
            continue  # no active CE would ever take it: draw another
        top = max(able) if able else None
        templates.append(Template(owner_id, group_id, setup, req, rng.choice(JOB_KINDS), top))
    return templates


def _requirements(rng: random.Random, sites, ces, pools) -> dict:
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
    if pools and rng.random() < 0.2:
        req["submit_pools"] = [rng.choice(pools)]
    return {f: taskqueues.canonical_values(v) for f, v in req.items()}


@dataclass
class _Batch:
    """One batch's drawn values, column by column (TaskQueue ids, templates, CPU times,
    priorities), and the time it was drawn. Job ids are reserved apart (moves.reserve_job_ids)."""

    tqs: list[int]
    templates: list[int]
    cpu: list[int]
    prio: list[int]
    now: datetime


def _draw(
    rng: random.Random,
    size: int,
    n_templates: int,
    segments: list[int],
    tq_of,
    segment: int | None = None,
    tops: list[int] | None = None,
    cpu_choices: list[list[tuple[int, int]]] | None = None,
) -> _Batch:
    # Template and CPU segment uniform (or the segment of index `segment` for every job; with
    # `tops`, uniform among a template's first tops[t] segments), a CPU time uniform inside the
    # segment; drawn in bulk (rng.choices, rng.random) rather than job by job, which dominated
    # the load's Python time.
    n_seg = len(segments)
    lows = [segments[i - 1] + 1 if i else 1 for i in range(n_seg)]
    spans = [segments[i] - lows[i] + 1 for i in range(n_seg)]
    tpl = rng.choices(range(n_templates), k=size)
    if cpu_choices is not None:  # (segment index, CPU time) pairs per template
        picked = [rng.choice(cpu_choices[t]) for t in tpl]
        seg = [s for s, _ in picked]
        cpu = [c for _, c in picked]
        tqs = [tq_of[t * n_seg + s] for t, s in zip(tpl, seg, strict=True)]
        return _Batch(tqs, tpl, cpu, rng.choices(PRIORITIES, k=size), clock.now())
    if segment is not None:
        seg = [segment] * size
    elif tops is None:
        seg = rng.choices(range(n_seg), k=size)
    else:
        seg = [int(rng.random() * tops[t]) for t in tpl]
    cpu = [lows[s] + int(rng.random() * spans[s]) for s in seg]
    tqs = [tq_of[t * n_seg + s] for t, s in zip(tpl, seg, strict=True)]
    prio = rng.choices(PRIORITIES, k=size)
    return _Batch(tqs, tpl, cpu, prio, clock.now())


def _job_fields(t: Template) -> tuple:
    r = t.requirements
    return (t.owner_id, t.owner_group_id, t.kind, t.setup, *(json.dumps(r[f]) for f in JSON_FIELDS))


def _copy_text(ids: list[int], b: _Batch, templates: list[Template]) -> tuple[str, str, str]:
    """The batch as COPY text for the jobs, the memberships and the history (see *_COLUMNS),
    made from per-template pieces rather than row by row through psycopg's write_row and
    json.dumps per job, which took most of the Python time of a load."""
    # Per template, the constant parts of a job line around its name's number and CPU time.
    heads, mids, lists = [], [], []
    for t in templates:
        owner, group, kind, setup, *json_lists = (db.copy_escape(v) for v in _job_fields(t))
        heads.append(f"\t{owner}\t{group}\t{kind}-")
        mids.append(f"\t{setup}\t")
        lists.append("\t" + "\t".join(json_lists) + "\t")
    now = b.now.isoformat()
    act = ACTIVATED
    tail = f"\t{act}\t{WAITING}\t"
    end = f"\t\t\t0\t{now}\t{now}\n"
    rows = list(zip(ids, b.templates, b.cpu, b.prio, b.tqs, strict=True))
    jobs = "".join(
        [f"{i}{heads[t]}{i:07d}{mids[t]}{c}{lists[t]}{p}{tail}{q}{end}" for i, t, c, p, q in rows]
    )
    members = "".join([f"{i}\t{q}\t{p}\n" for i, _, _, p, q in rows])
    history = "".join([f"{i}\t{now}\t\t{act}\tloaded; joined TaskQueue {q}\n" for i, *_, q in rows])
    return jobs, members, history


@dataclass
class _Prepared:
    """A batch ready to write: ids reserved and COPY data made beforehand, by the thread that
    draws the batches, so that the writers' connections only COPY and commit."""

    batch: _Batch
    copy_data: list[bytes]
    rollup: Counter | None = None  # {(owner, group, site): jobs}, for the job counts


def _prepare(batch: _Batch, templates: list[Template]) -> _Prepared:
    ids = moves.reserve_job_ids(len(batch.tqs))
    rollup = Counter()
    for t, n in Counter(batch.templates).items():
        rollup[(templates[t].owner_id, templates[t].owner_group_id, "")] += n
    copy_data = [text.encode() for text in _copy_text(ids, batch, templates)]
    return _Prepared(batch, copy_data, rollup)


def _write(prepared: _Prepared) -> int:
    """One batch in one transaction, through the lifecycle's bulk path (moves.create_jobs):
    the jobs, their memberships, their history rows and the TaskQueues' per-priority counts
    (last, so that concurrent writers hold those rows only for the moment of their commit)."""
    batch = prepared.batch
    counts = Counter(zip(batch.tqs, batch.prio, strict=True))
    jobs, members, history = prepared.copy_data
    with transaction.atomic(), connection.cursor() as cur:
        new = moves.NewJobs(
            ACTIVATED, JOB_COLUMNS, jobs, members, history, counts, prepared.rollup
        )
        moves.create_jobs(new, by=moves.SUBMISSION, cursor=cur)
    return len(batch.tqs)


def _write_on_own_connection(prepared: _Prepared) -> int:
    # In a worker thread: Django gives the thread its own connection; close it afterwards.
    try:
        return _write(prepared)
    finally:
        connection.close()


def default_workers() -> int:
    """Batches written at once. PostgreSQL spends most of a load checking foreign keys and
    updating indexes, one core per connection: two connections keep two cores busy while
    this thread prepares the next batch. A caller's open transaction (a test) is joined rather
    than bypassed: one at a time then."""
    if connection.in_atomic_block:
        return 1
    return max(1, min(LOAD_WORKERS, os.cpu_count() or 1))


def load_jobs(
    n: int,
    seed: int = 1,
    batch_size: int = 50_000,
    progress: Callable[[int, int], None] | None = None,
    templates: list[Template] | None = None,
    workers: int | None = None,
    segment: int | None = None,
    cpu_times: Sequence[int] | None = None,
    exclude_owners: Collection[str] = (),
) -> LoadResult:
    """Insert `n` activated jobs into their TaskQueues; returns counts and elapsed seconds.

    Each batch is one transaction; with several workers (PostgreSQL only) batches commit in
    parallel, each on its own connection, so a failed load leaves whole batches behind.
    `segment` (one of CPUSegments) puts every job in that CPU segment instead of a uniform one;
    `cpu_times` draws each job's CPU time among these values (those in the segments its
    template reaches) instead of uniformly inside a segment; `exclude_owners`: users who own
    none of the templates made here (make_templates)."""
    if n < 0:
        raise LoadError("the number of jobs must not be negative")
    if batch_size < 1:
        raise LoadError("the batch size must be positive")
    started = time.perf_counter()
    rng = random.Random(seed)
    templates = templates or make_templates(rng, exclude_owners=exclude_owners)
    segments = gdpconfig.get("CPUSegments")
    if segment is not None and segment not in segments:
        raise LoadError(f"{segment} is not one of the CPU segments {segments}")
    pinned = None if segment is None else segments.index(segment)
    counts = [len(segments) if t.top_segment is None else t.top_segment + 1 for t in templates]
    tops = None if all(c == len(segments) for c in counts) else counts
    cpu_choices = None
    if cpu_times is not None:
        if pinned is not None or not cpu_times or min(cpu_times) < 1:
            raise LoadError("cpu_times: positive CPU times, and not with a segment")
        index = {c: segments.index(taskqueues.cpu_segment(c, segments)) for c in cpu_times}
        # A template none of the CPU times fits gets the largest CPU time of its top segment.
        cpu_choices = [
            [(index[c], c) for c in cpu_times if index[c] < top] or [(top - 1, segments[top - 1])]
            for top in counts
        ]
    with transaction.atomic():
        defs = [
            taskqueues.definition(
                t.owner_id, t.owner_group_id, t.setup, seg, t.requirements, segments
            )
            for t in templates
            for seg in segments
        ]
        # tq_of[template index * len(segments) + segment index]
        tq_of = [tq.pk for tq in enqueue.taskqueues_for(defs)]
    used_tqs: set[int] = set()

    def batches():
        for start in range(0, n, batch_size):
            batch = _draw(
                rng,
                min(batch_size, n - start),
                len(templates),
                segments,
                tq_of,
                pinned,
                tops,
                cpu_choices,
            )
            used_tqs.update(batch.tqs)
            yield _prepare(batch, templates)

    workers = default_workers() if workers is None else workers
    done = 0
    if workers <= 1 or connection.in_atomic_block:
        for prepared in batches():
            done += _write(prepared)
            if progress:
                progress(done, n)
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="load_jobs") as pool:
            pending: set = set()
            for prepared in batches():
                if len(pending) >= workers:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        done += future.result()
                        if progress:
                            progress(done, n)
                pending.add(pool.submit(_write_on_own_connection, prepared))
            for future in as_completed(pending):
                done += future.result()
                if progress:
                    progress(done, n)
    # Template TaskQueues that drew no job would stay empty: drop them.
    housekeeping.drop_empty_taskqueues(set(tq_of) - used_tqs)
    moves.analyse_job_tables()
    return LoadResult(jobs=n, taskqueues=len(used_tqs), seconds=time.perf_counter() - started)
