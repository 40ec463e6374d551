"""Matching a pilot to one job: the DIRAC Matcher over our TaskQueues.

1. The TaskQueues the resource may take (pure rules in matching.py, evaluated against a
   per-process cache of TaskQueue definitions that is re-read when TaskQueues appear, vanish
   or change priority).
2. Those with the highest CPU segment; one drawn by priority (MatchDrawMode).
3. Inside it, the winning UserPriority drawn from the per-priority counts, then the ten lowest
   JobIDs at that priority not locked by another matcher, in random order; the first is claimed.
4. The claim is one transaction: the membership row is deleted (it must have been there), the
   job moves activated -> sent with the pilot, site and CE, its history and the count follow.
   A claim that loses a race moves on to the next candidate, priority, TaskQueue or segment.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, OperationalError, connection, transaction
from django.db.models import Count, F, Max, Q, Sum

from config import clock, gdpconfig
from matcher import matching
from matcher.models import (
    MULTI_VALUED_FIELDS,
    Job,
    JobStatus,
    JobStatusHistory,
    TaskQueue,
    TaskQueueJob,
    TaskQueuePriorityCount,
)
from matcher.services import add_to_counts, drop_empty_taskqueues

log = logging.getLogger(__name__)

CANDIDATE_JOBS = 10  # the seed's "get the first ten and order them in random order"

_rng = random.Random()
_lock = threading.Lock()
_cache: dict = {"marker": None, "tqs": [], "memo": {}}
MEMO_LIMIT = 4096
# How long a matcher trusts its TaskQueue cache before asking whether anything changed: a new
# TaskQueue waits at most this long to be matched; a vanished one is skipped (it has no count).
REFRESH_SECONDS = 0.0 if getattr(settings, "TESTING", False) else 1.0


@dataclass
class Match:
    job: MatchedJob
    task_queue_id: int


def _marker() -> tuple:
    """Changes whenever a TaskQueue appears or vanishes, any priority changes, or a group's
    JobSharing property flips (which changes what private pilots may take). The priorities
    enter weighted by id: their plain sum is the entities' shares, which stays put when
    priority moves between the TaskQueues of one entity."""
    agg = TaskQueue.objects.aggregate(
        n=Count("id"),
        top=Max("id"),
        prio=Sum(F("id") * F("priority")),
        sharing=Sum("id", filter=Q(owner_group__job_sharing=True)),
    )
    return (agg["n"], agg["top"], agg["prio"], agg["sharing"])


def _definition(tq: TaskQueue) -> matching.TQ:
    return matching.TQ(
        id=tq.pk,
        owner_id=tq.owner_id,
        owner_group_id=tq.owner_group_id,
        job_sharing=tq.owner_group.job_sharing,
        setup=tq.setup,
        cpu_time=tq.cpu_time,
        priority=tq.priority,
        sites=frozenset(tq.sites),
        banned_sites=frozenset(tq.banned_sites),
        grid_ces=frozenset(tq.grid_ces),
        platforms=frozenset(tq.platforms),
        pilot_types=frozenset(tq.pilot_types),
        tags=frozenset(tq.tags),
        owner_name=tq.owner.get_username(),
        group_name=tq.owner_group.name,
    )


def _load_taskqueues() -> list[matching.TQ]:
    rows = TaskQueue.objects.select_related("owner", "owner_group").order_by("id")
    return [_definition(tq) for tq in rows]


def taskqueue_definitions() -> list[matching.TQ]:
    """Every TaskQueue as the matcher sees it, from the cache while nothing changed."""
    now = time.monotonic()
    with _lock:
        if _cache["marker"] is not None and now - _cache.get("checked", 0.0) < REFRESH_SECONDS:
            return _cache["tqs"]
    marker = _marker()
    with _lock:
        if marker != _cache["marker"]:
            _cache.update(marker=marker, tqs=_load_taskqueues(), memo={})
        _cache["checked"] = now
        return _cache["tqs"]


def invalidate_cache() -> None:
    with _lock:
        _cache.update(marker=None, tqs=[], memo={}, checked=0.0)


def _segment_groups(resource: matching.Resource) -> list[list[matching.TQ]]:
    """The TaskQueues the resource may take, grouped by CPU segment (highest first), memoised
    per resource description until the TaskQueues change: pilots of one CE ask alike."""
    tqs = taskqueue_definitions()
    with _lock:
        groups = _cache["memo"].get(resource)
        if groups is None:
            groups = matching.by_cpu_segment(matching.matching(tqs, resource))
            if len(_cache["memo"]) >= MEMO_LIMIT:
                _cache["memo"].clear()
            _cache["memo"][resource] = groups
        return groups


def matching_taskqueues(resource: matching.Resource) -> list[matching.TQ]:
    return [tq for group in _segment_groups(resource) for tq in group]


_COUNTS_SQL = (
    f"SELECT user_priority, jobs FROM {TaskQueuePriorityCount._meta.db_table} "
    "WHERE task_queue_id = %s AND jobs > 0"
)


def _prepared_cursor():
    """A server-side-binding psycopg cursor on Django's connection: the matcher's two hot
    statements are prepared once per connection (half the database's CPU per match was
    planning them). Same connection and transaction state as Django's own cursors."""
    import psycopg

    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


def _priority_counts(tq_id: int) -> dict[int, int]:
    if connection.vendor == "postgresql":
        with _prepared_cursor() as cur:
            cur.execute(_COUNTS_SQL, [tq_id], prepare=True)
            return dict(cur.fetchall())
    with connection.cursor() as cur:  # on the hot path: no queryset to build
        cur.execute(_COUNTS_SQL, [tq_id])
        return dict(cur.fetchall())


@dataclass
class MatchedJob:
    """What a pilot is told about the job it got."""

    id: int
    name: str
    owner: str
    owner_dn: str | None
    owner_group: str
    setup: str
    cpu_time: int
    user_priority: int
    site: str
    grid_ce: str
    requirements: dict


def _claim(tq_id: int, priority: int, resource, pilot_reference, rng) -> MatchedJob | None:
    """Claim one of the ten lowest free JobIDs at this priority; None if there is none."""
    now = clock.now()
    reason = f"matched to pilot {pilot_reference or '?'} at {resource.site}"[:255]
    fields = {
        "site": resource.site or "",
        "grid_ce": resource.grid_ce or "",
        "pilot_reference": pilot_reference[:255],
        "reason": reason,
        "now": now,
    }
    if connection.vendor == "postgresql":
        try:
            return _claim_postgresql(tq_id, priority, rng, fields)
        except OperationalError:
            return None  # lost a race (a deadlock with a concurrent kill, say): next candidate
    return _claim_orm(tq_id, priority, rng, fields)


_JOB_COLUMNS = [
    "id",
    "name",
    "setup",
    "cpu_time",
    "user_priority",
    "site",
    "grid_ce",
    *MULTI_VALUED_FIELDS,
]

# One statement, hence one transaction and one round trip: lock the ten lowest free job ids at
# this priority (SKIP LOCKED: rows another matcher is claiming are not candidates, so matchers
# never wait for each other), pick one at random, delete its membership, move the job
# activated -> sent, decrement the count, write the history, and return what the pilot needs.
_CLAIM_SQL = """
WITH cand AS (
    SELECT job_id FROM matcher_taskqueuejob
    WHERE task_queue_id = %(tq)s AND user_priority = %(prio)s
    ORDER BY job_id LIMIT {limit} FOR UPDATE SKIP LOCKED
), pick AS (
    SELECT job_id FROM cand ORDER BY job_id
    LIMIT 1 OFFSET (%(r)s %% GREATEST((SELECT count(*) FROM cand), 1))
), del AS (
    DELETE FROM matcher_taskqueuejob m USING pick WHERE m.job_id = pick.job_id
    RETURNING m.job_id
), cnt AS (
    UPDATE matcher_taskqueueprioritycount SET jobs = jobs - 1
    WHERE task_queue_id = %(tq)s AND user_priority = %(prio)s AND EXISTS (SELECT 1 FROM del)
), upd AS (
    UPDATE matcher_job j SET status = 'sent', status_reason = %(reason)s,
        status_changed = %(now)s, site = %(site)s, grid_ce = %(grid_ce)s,
        pilot_reference = %(pilot_reference)s
    FROM del WHERE j.id = del.job_id AND j.status = 'activated'
    RETURNING j.*
), hist AS (
    INSERT INTO matcher_jobstatushistory (job_id, at, from_status, to_status, reason)
    SELECT id, %(now)s, 'activated', 'sent', %(reason)s FROM upd
)
SELECT (SELECT count(*) FROM del), {columns}, u.username, u.dn, g.name
FROM (SELECT 1) one
LEFT JOIN upd ON true
LEFT JOIN shares_user u ON u.id = upd.owner_id
LEFT JOIN shares_gridgroup g ON g.id = upd.owner_group_id
""".format(limit=CANDIDATE_JOBS, columns=", ".join(f"upd.{c}" for c in _JOB_COLUMNS))


def _matched(row) -> MatchedJob:
    values = dict(zip(_JOB_COLUMNS, row[: len(_JOB_COLUMNS)], strict=True))
    owner, dn, group = row[len(_JOB_COLUMNS) :]
    reqs = {}
    for f in MULTI_VALUED_FIELDS:
        v = values.pop(f)
        reqs[f] = json.loads(v) if isinstance(v, str) else v
    return MatchedJob(owner=owner, owner_dn=dn, owner_group=group, requirements=reqs, **values)


def _claim_postgresql(tq_id, priority, rng, fields) -> MatchedJob | None:
    params = {"tq": tq_id, "prio": priority, "r": rng.randrange(1 << 30), **fields}
    with _prepared_cursor() as cur:
        while True:
            cur.execute(_CLAIM_SQL, params, prepare=True)
            row = cur.fetchone()
            if row[0] == 0:
                return None  # no free job at this priority
            if row[1] is not None:
                return _matched(row[1:])
            # A stray membership of a job no longer waiting was removed: try again.


def _claim_orm(tq_id, priority, rng, fields) -> MatchedJob | None:
    """The same claim for SQLite, whose writes are serialised (BEGIN IMMEDIATE)."""
    while True:
        with _sqlite_turn():
            found, took_any = _claim_orm_once(tq_id, priority, rng, fields)
        if found is not None or not took_any:
            return found
        # Only stray memberships (jobs no longer waiting) were among the ten: look again.


@contextmanager
def _sqlite_turn():
    """Matchers on one SQLite file take turns through a file lock: waiting in SQLite's busy
    handler backs off up to 100 ms a retry and lets newcomers pass, so a match could wait
    seconds; a queue on flock keeps every wait short. (In-memory databases: nothing to do.)"""
    name = str(connection.settings_dict["NAME"])
    if (
        connection.vendor != "sqlite"
        or connection.in_atomic_block
        or not name
        or ":memory:" in name
        or "mode=memory" in name
    ):
        yield
        return
    import fcntl

    with open(f"{name}.matchlock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _claim_orm_once(tq_id, priority, rng, fields):
    with transaction.atomic():
        candidates = list(
            TaskQueueJob.objects.select_for_update(skip_locked=True)
            .filter(task_queue_id=tq_id, user_priority=priority)
            .order_by("job_id")
            .values_list("job_id", flat=True)[:CANDIDATE_JOBS]
        )
        rng.shuffle(candidates)
        took_any = False
        for job_id in candidates:
            if TaskQueueJob.objects.filter(job_id=job_id).delete()[0] != 1:
                continue  # taken meanwhile
            took_any = True
            add_to_counts(Counter({(tq_id, priority): -1}))
            moved = Job.objects.filter(pk=job_id, status=JobStatus.ACTIVATED).update(
                status=JobStatus.SENT,
                status_reason=fields["reason"],
                status_changed=fields["now"],
                site=fields["site"],
                grid_ce=fields["grid_ce"],
                pilot_reference=fields["pilot_reference"],
            )
            if moved != 1:
                continue  # a stray membership of a job no longer waiting: dropped, go on
            JobStatusHistory.objects.create(
                job_id=job_id,
                at=fields["now"],
                from_status=JobStatus.ACTIVATED,
                to_status=JobStatus.SENT,
                reason=fields["reason"],
            )
            job = Job.objects.select_related("owner", "owner_group").get(pk=job_id)
            return MatchedJob(
                id=job.pk,
                name=job.name,
                owner=job.owner.get_username(),
                owner_dn=job.owner.dn,
                owner_group=job.owner_group.name,
                setup=job.setup,
                cpu_time=job.cpu_time,
                user_priority=job.user_priority,
                site=job.site,
                grid_ce=job.grid_ce,
                requirements=job.requirements(),
            ), True
    return None, took_any


def match_job(
    resource: matching.Resource,
    pilot_reference: str = "",
    rng: random.Random | None = None,
    mode: str | None = None,
) -> Match | None:
    """Give the resource one job, or None when no waiting job fits it."""
    rng = rng or _rng
    mode = mode or gdpconfig.get("MatchDrawMode")
    exhausted: list[int] = []
    for group in _segment_groups(resource):
        order = matching.race_order([tq.priority for tq in group], rng, mode)
        for i in order:
            tq = group[i]
            counts = _priority_counts(tq.id)
            while counts:
                priority = matching.draw_user_priority(counts, rng, mode)
                job = _claim(tq.id, priority, resource, pilot_reference, rng)
                if job is not None:
                    if sum(counts.values()) == 1:
                        _drop_quietly([tq.id])  # that was its last job
                    return Match(job=job, task_queue_id=tq.id)
                counts.pop(priority)  # nothing free at this priority now
            exhausted.append(tq.id)
    if exhausted:
        _drop_quietly(exhausted)  # only those really empty go
    return None


def _drop_quietly(tq_ids) -> None:
    """Housekeeping after a claim has committed: a failure here must not lose the pilot its
    job (the cleanup cycle drops empty TaskQueues anyway)."""
    try:
        with _sqlite_turn():
            drop_empty_taskqueues(tq_ids)
    except DatabaseError:
        log.warning("could not drop empty TaskQueues %s now", tq_ids, exc_info=True)


def explain(definition: matching.TQ, resources) -> list[dict]:
    """For each (label, site, ce, Resource): does the TaskQueue match it, and if not, the first
    rule that fails (like condor_q -better-analyze)."""
    rows = []
    for site, ce, resource in resources:
        failed = matching.first_failing_rule(definition, resource)
        rows.append(
            {
                "site": site,
                "ce": ce,
                "matches": failed is None,
                "rule": failed[0] if failed else "",
                "detail": failed[1] if failed else "",
            }
        )
    return rows


def definition_of(tq_id: int) -> matching.TQ | None:
    """A TaskQueue's definition, read from the database itself when the matcher's cache does
    not hold it yet (a TaskQueue made a moment ago, before the cache's next refresh)."""
    for tq in taskqueue_definitions():
        if tq.id == tq_id:
            return tq
    row = TaskQueue.objects.select_related("owner", "owner_group").filter(pk=tq_id).first()
    return _definition(row) if row is not None else None


def ce_resources():
    """A resource description per active computing element, as its pilots would present it."""
    from matcher.models import ComputingElement

    for ce in ComputingElement.objects.select_related("site").filter(
        status=ComputingElement.Status.ACTIVE
    ):
        yield (
            ce.site.name,
            ce.name,
            matching.Resource(
                site=ce.site.name,
                grid_ce=ce.name,
                setup="any",
                cpu_time=ce.cpu_time_limit,
                platforms=frozenset(ce.platforms),
                tags=frozenset(ce.tags),
                pilot_type="any",
            ),
        )


def analyse_job(job: Job) -> dict:
    """Why a job is (not) running: for a waiting job, which CEs could take its TaskQueue and,
    for the others, the first rule that fails."""
    if job.status != JobStatus.ACTIVATED:
        return {"waiting": False, "task_queue": job.task_queue_id, "status": job.status, "ces": []}
    tq = definition_of(job.task_queue_id) if job.task_queue_id else None
    if tq is None:
        return {"waiting": True, "task_queue": None, "status": job.status, "ces": []}
    rows = explain(tq, ce_resources())
    return {
        "waiting": True,
        "task_queue": tq.id,
        "status": job.status,
        "matching_ces": sum(r["matches"] for r in rows),
        "ces": rows,
    }


def taskqueue_draw_table(resource: matching.Resource, mode: str | None = None) -> list[dict]:
    """The TaskQueues a resource would take, in the matcher's order, with the probability each
    has of being drawn: within the highest CPU segment by priority; lower segments only as a
    fall-back when every job of the higher ones is taken (probability 0 here)."""
    mode = mode or gdpconfig.get("MatchDrawMode")
    tqs = matching_taskqueues(resource)
    waiting = dict(
        TaskQueuePriorityCount.objects.filter(task_queue_id__in=[t.id for t in tqs])
        .values_list("task_queue_id")
        .annotate(n=Sum("jobs"))
    )
    rows = []
    for rank, group in enumerate(matching.by_cpu_segment(tqs)):
        live = [t for t in group if waiting.get(t.id, 0) > 0]
        probs = matching.win_probabilities([t.priority for t in live], mode) if rank == 0 else []
        p_of = dict(zip([t.id for t in live], probs, strict=False))
        for tq in sorted(group, key=lambda t: (-p_of.get(t.id, 0.0), -t.priority, t.id)):
            rows.append(
                {
                    "tq": tq,
                    "waiting_jobs": waiting.get(tq.id, 0),
                    "probability": p_of.get(tq.id, 0.0),
                    "fallback": rank > 0,
                }
            )
    return rows
