"""Bulk loading of activated jobs with their TaskQueues, for the demo and for scale work.

Jobs are generated from a few dozen requirement templates (so that they fall into a realistic
number of TaskQueues), drawn batch by batch, and written by the job lifecycle's bulk writer
(matcher/services/bulkload.py): the jobs, their TaskQueue memberships, their first
status-history row, the per-priority counts and the job counts, built by the database from
five numbers per job. A large load into a smaller job table is one transaction that builds the
indexes at its end while a thread draws the next batch; any other goes batch by batch, each
batch one transaction (a load stopped mid-way leaves only whole batches), two connections
writing at once. The tables are analysed at the end.
"""

from __future__ import annotations

import logging
import os
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction

from core import clock, gdpconfig
from matcher import feasibility, taskqueues
from matcher.dispatcher import ce_resources
from matcher.models import ComputingElement, JobStatusHistory, Site
from matcher.services import bulkload, enqueue, housekeeping, moves, submission
from shares.models import User

PLATFORMS = ["x86_64-el9", "x86_64-centos7", "aarch64-el9"]
TAGS = ["MultiProcessor", "4Processors", "8Processors", "16GB", "GPU"]
JOB_KINDS = ["mc-sim", "reco", "stripping", "user-ana", "merge", "test"]
PRIORITIES = (1, 1, 1, 2, 3, 5, 8)
WAITING = submission.WAITING  # an activated job's status reason
REASON = "loaded"  # its history row's: "loaded; joined TaskQueue <id>"
LOAD_WORKERS = 2

log = logging.getLogger(__name__)


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
    bulk_built: bool = False  # in one transaction, indexes built at the end (bulkload)

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
    priorities), and the time it was drawn. Ids are reserved apart (bulkload.reserve_job_ids)."""

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


def _staged(ids: Sequence[int], b: _Batch, templates: list[Template]) -> bulkload.StagedBatch:
    """The batch as the five numbers per job the database builds its rows from (bulkload), its
    per-priority counts and its jobs per owner and group."""
    rows = "".join(
        [f"{i}\t{t}\t{c}\t{p}\t{q}\n" for i, t, c, p, q in zip(ids, *_columns(b), strict=True)]
    )
    rollup: Counter = Counter()
    for t, k in Counter(b.templates).items():
        rollup[(templates[t].owner_id, templates[t].owner_group_id)] += k
    counts = Counter(zip(b.tqs, b.prio, strict=True))
    return bulkload.StagedBatch(rows.encode(), b.now, len(b.tqs), counts, rollup)


def _columns(b: _Batch) -> tuple:
    return b.templates, b.cpu, b.prio, b.tqs


@dataclass
class _Load:
    """A load's fixed parts: its templates as the writer takes them, the users and groups they
    name, the history reason."""

    templates: list[bulkload.JobTemplate]
    users: set[int]
    groups: set[int]

    def writer(self, cur) -> bulkload.Writer:
        return bulkload.Writer(cur, self.templates, WAITING, REASON).open()


def _write_batch(load: _Load, staged: bulkload.StagedBatch) -> int:
    """One batch in one transaction of its own (or a savepoint of a caller's): its TaskQueues,
    users and groups held, its rows, then its counts."""
    own = not connection.in_atomic_block
    try:
        with transaction.atomic(), connection.cursor() as cur:
            if own:
                cur.execute("SET LOCAL synchronous_commit = off")  # all or nothing all the same
            tqs = {tq for tq, _prio in staged.counts}
            bulkload.hold_references(cur, load.users, load.groups, tqs)
            with bulkload.foreign_key_checks_off(cur):
                writer = load.writer(cur)
                writer.write(staged)
                writer.close()
    except bulkload.ReferenceMissing as exc:
        raise LoadError(f"removed during the load: {exc}") from exc
    return staged.size


def _write_on_own_connection(load: _Load, staged: bulkload.StagedBatch) -> int:
    # In a worker thread: Django gives the thread its own connection; close it afterwards.
    try:
        return _write_batch(load, staged)
    finally:
        connection.close()


def default_workers() -> int:
    """Batches written at once when a load goes batch by batch. PostgreSQL spends most of such a
    load updating indexes, one core per connection: two connections keep two cores busy while
    this thread draws the next batch. A caller's open transaction (a test) is joined rather
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
    bulk_build: bool | None = None,
) -> LoadResult:
    """Insert `n` activated jobs into their TaskQueues; returns counts and elapsed seconds.

    A large load into a smaller job table is one transaction that builds the job tables'
    indexes at its end (matcher/services/bulkload.py says when, and what others see); any other
    is written batch by batch, each batch one transaction, with several workers (batches commit
    in parallel, each on its own connection), so a failed load leaves whole batches behind.
    `bulk_build`: True or False to choose, None to follow that rule.
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
    defs = [
        taskqueues.definition(t.owner_id, t.owner_group_id, t.setup, seg, t.requirements, segments)
        for t in templates
        for seg in segments
    ]
    load = _Load(
        [
            bulkload.JobTemplate(t.owner_id, t.owner_group_id, f"{t.kind}-", t.setup, req)
            for t in templates
            for req in [t.requirements]
        ],
        {t.owner_id for t in templates},
        {t.owner_group_id for t in templates},
    )
    ids = bulkload.reserve_job_ids(n)
    history_ids = bulkload.reserve_ids(JobStatusHistory, n)
    used_tqs: set[int] = set()

    def batches(tq_of: list[int]) -> Iterator[bulkload.StagedBatch]:
        # tq_of[template index * len(segments) + segment index]
        for start in range(0, n, batch_size):
            size = min(batch_size, n - start)
            batch = _draw(rng, size, len(templates), segments, tq_of, pinned, tops, cpu_choices)
            used_tqs.update(batch.tqs)
            staged = _staged(ids[start : start + size], batch, templates)
            if history_ids is not None:
                staged.history_ids = history_ids[start : start + size]
            yield staged

    tq_of = None
    if n and bulkload.bulk_build_wanted(n, bulk_build):
        try:
            tq_of = _load_at_once(load, defs, batches, n, progress)
        except bulkload.Busy as exc:
            log.info("loading batch by batch: %s", exc)
    built = tq_of is not None
    if tq_of is None:
        tq_of = _load_by_batches(load, defs, batches, n, workers, progress)
    # Template TaskQueues that drew no job would stay empty: drop them.
    housekeeping.drop_empty_taskqueues(set(tq_of) - used_tqs)
    moves.analyse_job_tables()
    return LoadResult(n, len(used_tqs), time.perf_counter() - started, bulk_built=built)


def _load_at_once(load: _Load, defs, batches, n: int, progress) -> list[int]:
    """The whole load in one transaction: its TaskQueues made and held, the job tables locked
    and their indexes built at the end (bulkload.indexes_built_after), the batches drawn by a
    thread of their own while the database writes the previous one. Busy if the tables are."""
    own = not connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cur:
        if own:
            cur.execute("SET LOCAL synchronous_commit = off")
        tq_of = _held_taskqueues(cur, load, defs)
        with bulkload.indexes_built_after(cur), bulkload.foreign_key_checks_off(cur):
            writer = load.writer(cur)
            done = 0
            for staged in _ahead(batches(tq_of)):
                writer.write(staged)
                done += staged.size
                if progress:
                    progress(done, n)
            writer.close()
    return tq_of


def _held_taskqueues(cur, load: _Load, defs) -> list[int]:
    # A TaskQueue found empty may be dropped (housekeeping) between finding and holding it:
    # then it is made again.
    for attempt in range(3):
        tq_of = [tq.pk for tq in enqueue.taskqueues_for(defs)]
        try:
            bulkload.hold_references(cur, load.users, load.groups, set(tq_of))
            return tq_of
        except bulkload.ReferenceMissing as exc:
            if attempt == 2:
                raise LoadError(f"removed during the load: {exc}") from exc
    raise AssertionError("unreachable")


def _load_by_batches(load: _Load, defs, batches, n: int, workers, progress) -> list[int]:
    with transaction.atomic():
        tq_of = [tq.pk for tq in enqueue.taskqueues_for(defs)]
    workers = default_workers() if workers is None else workers
    done = 0
    if workers <= 1 or connection.in_atomic_block:
        for staged in batches(tq_of):
            done += _write_batch(load, staged)
            if progress:
                progress(done, n)
        return tq_of
    with ThreadPoolExecutor(workers, thread_name_prefix="load_jobs") as pool:
        pending: set = set()
        for staged in batches(tq_of):
            if len(pending) >= workers:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    done += future.result()
                    if progress:
                        progress(done, n)
            pending.add(pool.submit(_write_on_own_connection, load, staged))
        for future in as_completed(pending):
            done += future.result()
            if progress:
                progress(done, n)
    return tq_of


_END = object()


def _ahead(items: Iterator, depth: int = 2) -> Iterator:
    """`items`, produced by a thread of their own up to `depth` ahead of the consumer: drawing a
    batch (Python) overlaps the database writing the previous one. An error in the producer is
    raised here; a consumer that stops early stops the producer."""
    out: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        out.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            out.put(_END)
        except BaseException as exc:  # handed to the consumer
            out.put(exc)

    thread = threading.Thread(target=produce, name="load_jobs-draw", daemon=True)
    thread.start()
    try:
        while (item := out.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()
