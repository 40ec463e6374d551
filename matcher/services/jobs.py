"""What moves a job once it exists, in the grid's words: brokerage placing it or holding it
back, its owner or staff killing or rescheduling it, its pilot reporting on it and sending
heartbeats (a pilot failure sends the job back to wait), and the retention cycle purging it
when old. Each through
matcher.services.moves (one lock order, checked against matcher.lifecycle, a history row per
move, TaskQueue membership kept exact).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, models, transaction

from core import clock, db, gdpconfig
from matcher import errors, lifecycle, taskqueues
from matcher.lifecycle import (
    ACTIVATED,
    AT_WORK_STATES,
    CANCELLED,
    CLAIMED_STATES,
    FAILED,
    FINISHED,
)
from matcher.models import MULTI_VALUED_FIELDS, RESULT_FIELDS, Job, TaskQueueJob
from matcher.services import enqueue, failures, housekeeping, moves, rollups
from matcher.services.moves import JobActionError, MoveRefused, NotHeld
from matcher.services.submission import WAITING

# --- brokerage -----------------------------------------------------------------------------------


def activate_jobs(sites_by_job: dict[int, Sequence[str]], reason: str) -> int:
    """Brokerage placed these jobs: restrict each to its sites and let it wait in the TaskQueue
    of its new definition. Jobs no longer waiting for brokerage are left alone. Call inside a
    transaction; returns the number of jobs activated.

    Written for thousands of jobs a cycle: rows are read as tuples, one TaskQueue lookup per
    distinct definition, one UPDATE per (sites, TaskQueue), bulk inserts."""
    now = clock.now()
    segments = gdpconfig.get("CPUSegments")
    others = [f for f in MULTI_VALUED_FIELDS if f != "sites"]
    rows = list(
        Job.objects.select_for_update()
        .filter(pk__in=sorted(sites_by_job), status__in=lifecycle.WAITING_TO_BROKER)
        .order_by("pk")
        .values_list(
            "pk",
            "status",
            "owner_id",
            "owner_group_id",
            "setup",
            "cpu_time",
            "user_priority",
            "site",
            *others,
        )
    )
    if not rows:
        return 0
    defs, placed = {}, []  # placed: (job, status, priority, definition key, sites)
    counted = []  # the moves, for the job counts
    for pk, status, owner, group, setup, cpu, prio, site, *multi in rows:
        counted.append((owner, group, site, status, site, ACTIVATED))
        moves.check_move(moves.BROKERAGE, pk, status, ACTIVATED)
        sites = tuple(taskqueues.canonical_values(sites_by_job[pk]))
        requirements = {"sites": sites, **dict(zip(others, multi, strict=True))}
        defn = taskqueues.definition(owner, group, setup, cpu, requirements, segments)
        key = taskqueues.definition_key(defn)
        defs.setdefault(key, defn)
        placed.append((pk, status, prio, key, sites))
    tq_of = {
        key: tq.pk
        for key, tq in zip(defs, enqueue.taskqueues_for(list(defs.values())), strict=True)
    }
    groups: dict[tuple, list[int]] = {}
    for pk, _status, _prio, key, sites in placed:
        groups.setdefault((sites, tq_of[key]), []).append(pk)
    status_reason = f"{WAITING}; {reason}"[:255]
    for (sites, tq_id), ids in groups.items():
        Job.objects.filter(pk__in=ids).update(
            sites=list(sites),
            task_queue_id=tq_id,
            status=ACTIVATED,
            status_reason=status_reason,
            status_changed=now,
        )
    enqueue.join_taskqueues([(pk, tq_of[key], prio) for pk, _s, prio, key, _ in placed])
    moves.record_history(
        [
            (pk, now, status, ACTIVATED, f"{reason}; joined TaskQueue {tq_of[key]}")
            for pk, status, _prio, key, _sites in placed
        ]
    )
    rollups.record(counted, now)
    return len(rows)


def set_waiting_status(job_ids: Iterable[int], to: str, reason: str) -> int:
    """Brokerage holds jobs back: those still waiting for it move to pending / throttled /
    defined, with history. Call inside a transaction; returns the number moved."""
    now = clock.now()
    jobs = list(
        Job.objects.select_for_update()
        .filter(pk__in=sorted(set(job_ids)), status__in=lifecycle.WAITING_TO_BROKER)
        .exclude(status=to)
        .order_by("pk")
        .values_list("pk", "status", "owner_id", "owner_group_id", "site")
    )
    for pk, status, *_ in jobs:
        moves.check_move(moves.BROKERAGE_HOLDS, pk, status, to)
    moves.record_history([(pk, now, status, to, reason) for pk, status, *_ in jobs])
    Job.objects.filter(pk__in=[pk for pk, *_ in jobs]).update(
        status=to, status_reason=reason[:255], status_changed=now
    )
    rollups.record(((o, g, site, st, site, to) for _, st, o, g, site in jobs), now)
    return len(jobs)


# --- a user's actions ----------------------------------------------------------------------------


def _refuse_unless_allowed(action: str, job: Job, user) -> None:
    reason = lifecycle.refusal(action, job.status, user.is_staff)
    if reason is not None:
        raise JobActionError(
            f"job {job.pk} cannot be {lifecycle.JOB_ACTIONS[action].done}: {reason}"
        )


def kill_job(job_id: int, user, reason: str = "") -> Job:
    """Cancel a live job (lifecycle.JOB_ACTIONS["kill"]; JobActionError otherwise): it leaves
    its TaskQueue, which is dropped after the commit if that left it empty."""

    def attempt() -> tuple[Job, int | None]:
        with transaction.atomic():
            job = moves.lock_job(job_id)
            _refuse_unless_allowed("kill", job, user)
            why = reason or f"killed by {user.get_username()}"
            # A pilot holding it is told in the answer to its next heartbeat.
            held = job.status in CLAIMED_STATES and job.pilot_id is not None
            extra = {"kill_requested": True} if held else {}
            return job, moves.move_job(job, CANCELLED, why, by=moves.KILL, **extra)

    job, left = moves.retry_on_race(attempt)
    housekeeping.drop_if_empty([left])
    return job


def reschedule_job(job_id: int, user) -> Job:
    """Send a job back to wait in the TaskQueue of its (current) definition, from the states
    `lifecycle.JOB_ACTIONS` allows; a pilot's claim on it is revoked (its reference cleared, so
    that its later reports are refused)."""

    def attempt() -> tuple[Job, int | None]:
        with transaction.atomic():
            job = moves.lock_job(job_id)
            _refuse_unless_allowed("reschedule", job, user)
            limit = gdpconfig.get("MaxRescheduling")
            if job.reschedule_count >= limit:
                raise JobActionError(
                    f"job {job_id} was rescheduled {job.reschedule_count} times "
                    f"(MaxRescheduling = {limit})"
                )
            revoked = (
                f"; pilot {job.pilot_reference}'s claim revoked" if job.pilot_reference else ""
            )
            left = _requeue(job, f"rescheduled by {user.get_username()}{revoked}")
            return job, left

    job, left = moves.retry_on_race(attempt)
    housekeeping.drop_if_empty([left])
    return job


def _requeue(job: Job, reason: str, *, now: datetime | None = None) -> int | None:
    """The locked job back to `activated` for another pilot: its placement and its pilot's claim
    cleared, its results reset, one more rescheduling counted. The TaskQueue it left, if any."""
    return moves.move_job(
        job,
        ACTIVATED,
        reason,
        by=moves.RESCHEDULE,
        now=now,
        site="",
        grid_ce="",
        pilot_reference="",
        pilot=None,
        reschedule_count=job.reschedule_count + 1,
        **FRESH_RESULTS,
    )


NOT_YOURS = "not a job you may act on"  # unknown or another's: its existence is not revealed


@dataclass
class BulkOutcome:
    done: list[int] = field(default_factory=list)
    refused: dict[int, str] = field(default_factory=dict)  # job id -> why


def act_on_jobs(action: str, job_ids: Iterable[int], user, visible) -> BulkOutcome:
    """Kill or reschedule many jobs in one transaction, each checked as one: among `visible`
    (the jobs the user may see and act on: Job.objects.visible_to), by the lifecycle's rule
    for its state. A refused job is named with its reason and left as it is; the others are
    done, in id order (one lock order)."""
    one = {"kill": kill_job, "reschedule": reschedule_job}[action]
    wanted = sorted(set(job_ids))
    mine = set(visible.filter(pk__in=wanted).values_list("pk", flat=True))
    out = BulkOutcome(refused={pk: NOT_YOURS for pk in wanted if pk not in mine})
    with transaction.atomic():
        for pk in wanted:
            if pk not in mine:
                continue
            try:
                with transaction.atomic():  # a refusal undoes its own job only
                    one(pk, user)
            except JobActionError as exc:
                out.refused[pk] = str(exc).removeprefix(f"job {pk} ")
            else:
                out.done.append(pk)
    return out


# --- pilots --------------------------------------------------------------------------------------


FRESH_RESULTS = {
    "exit_code": None,
    "application_status": "",
    "cpu_seconds": None,
    "wall_seconds": None,
    "peak_memory_kb": None,
    "hostname": "",
    "output_truncated": "",
    "error_code": None,
    "error_category": "",
    "kill_requested": False,
    "output_tail": "",
}


def _outcome(to: str, reason: str, results: dict) -> tuple[str, str]:
    """A `finished` payload with a non-zero exit code failed: (state, reason). A failed job
    gets its error code and category (matcher.errors.classify) in `results`."""
    code = results.get("exit_code")
    if to == FINISHED and code not in (None, 0):
        app = results.get("application_status") or ""
        to, reason = FAILED, f"exit code {code}" + (f"; {app}" if app else "")
    if to == FAILED:
        _classify(results, reason)
    else:
        results.pop("error_code", None)
        results.pop("error_category", None)
    return to, reason


def _classify(results: dict, reason: str, default: int | None = None) -> None:
    """The failed job's error code (the pilot's own, else from its exit code and signal, else
    `default`) and that code's category, into `results`."""
    reported = results.get("error_code", default)
    found = errors.classify(results.get("exit_code"), reason, reported)
    results.pop("error_category", None)
    if found is not None:
        results["error_code"], results["error_category"] = found.code, found.category


def _acknowledge_kill(job: Job, pilot_id: int | None, results: dict) -> Job:
    """The pilot stopped a payload killed while it held the job: the exit info is kept, the
    job stays cancelled, the kill is no longer pending. NotHeld for a job that was not
    killed under that pilot."""
    if job.status != CANCELLED or (pilot_id is not None and job.pilot_id != pilot_id):
        raise NotHeld(job.pk, pilot_id)
    for name, value in results.items():
        setattr(job, name, value)
    job.kill_requested = False
    job.save(update_fields=[*results, "kill_requested"])
    return job


def report_job(
    job_id: int,
    to: str,
    reason: str = "",
    pilot_id: int | None = None,
    results: dict | None = None,
) -> Job:
    """A pilot's report on the job it holds: the job moves along lifecycle.PILOT_REPORTS
    (sent -> starting/running, running -> holding/transferring, and on to finished or failed;
    the exit code and message go in `reason`) and its heartbeat is now. With a `pilot_id`,
    only while that pilot still holds the job, checked under the job's lock (a reschedule may
    have revoked the claim since the caller looked): NotHeld otherwise. A report
    PILOT_REPORTS does not allow from the job's state: MoveRefused. Nothing is written on
    either; Job.DoesNotExist for an unknown job. Its own transaction (or the caller's).

    `results` (RESULT_FIELDS) are stored with the move: a `finished` report with a non-zero
    exit code fails the job ("exit code N"). `cancelled` acknowledges a kill (the job stays
    cancelled, the results are kept, kill_requested clears)."""
    now = clock.now()
    results = {k: v for k, v in (results or {}).items() if k in RESULT_FIELDS}
    with transaction.atomic():
        job = moves.lock_job(job_id, related=())
        if to == CANCELLED:
            return _acknowledge_kill(job, pilot_id, results)
        if pilot_id is not None and job.pilot_id != pilot_id:
            raise NotHeld(job_id, pilot_id)
        to, reason = _outcome(to, reason, results)
        if not moves.permitted(moves.PILOT_REPORT, job.status, to):
            raise MoveRefused(f"job {job_id} is {job.status}, it cannot become {to}")
        moves.move_job(job, to, reason, by=moves.PILOT_REPORT, now=now, heartbeat=now, **results)
    return job


def report_pilot_failure(
    job_id: int, reason: str, pilot_id: int | None = None, results: dict | None = None
) -> Job:
    """The job's pilot stopped its payload for a reason of its own, not the job's (its
    lifetime ended): a pilot failure. The job is rescheduled automatically (lifecycle's
    "reschedule" move): back to wait in its TaskQueue, the pilot's claim revoked, this
    attempt's results cleared, the pilot's `reason` in its history and status reason. At
    MaxRescheduling it fails instead, with that reason. With a `pilot_id`, only while that
    pilot holds the job (NotHeld); from a state a pilot does not hold it in, MoveRefused.
    Its own transaction (retried on a lost race, as a reschedule); `results` are kept only
    when the job fails."""
    results = {k: v for k, v in (results or {}).items() if k in RESULT_FIELDS}
    why = reason or "pilot failure"

    def attempt() -> tuple[Job, int | None]:
        now = clock.now()
        with transaction.atomic():
            job = moves.lock_job(job_id, related=())
            if pilot_id is not None and job.pilot_id != pilot_id:
                raise NotHeld(job_id, pilot_id)
            if job.status not in CLAIMED_STATES:
                raise MoveRefused(f"job {job_id} is {job.status}: no pilot holds it")
            limit = gdpconfig.get("MaxRescheduling")
            if job.reschedule_count >= limit:
                failed = f"{why}; not rescheduled: MaxRescheduling ({limit}) reached"
                _classify(results, why, errors.REACHED_MAX_TIME)
                moves.move_job(
                    job, FAILED, failed, by=moves.PILOT_REPORT, now=now, heartbeat=now, **results
                )
                return job, None
            left = _requeue(
                job,
                f"{why}; rescheduled automatically, pilot {job.pilot_reference}'s claim revoked",
                now=now,
            )
            return job, left

    job, left = moves.retry_on_race(attempt)
    housekeeping.drop_if_empty([left])
    return job


KILL = "kill"  # the command a heartbeat's answer carries to the pilot of a killed job


def record_heartbeat(
    job_id: int, pilot_id: int | None = None, output_tail: str | None = None
) -> list[str]:
    """The job's heartbeat is now (no state changes), with the payload's last lines of output
    if given. With a `pilot_id` (a pilot's report), only while that pilot holds the job in a
    state a pilot holds it in: NotHeld otherwise (its message says which), nothing written.
    Returns the commands for the pilot: ["kill"] for a job killed while that pilot held it
    (then the heartbeat of the cancelled job is taken, not refused)."""
    jobs = Job.objects.filter(pk=job_id)
    now = clock.now()
    tail = {} if output_tail is None else {"output_tail": output_tail[-4096:]}
    if pilot_id is None:
        jobs.update(heartbeat=now, **tail)
        return []
    if jobs.filter(pilot_id=pilot_id, status__in=CLAIMED_STATES).update(heartbeat=now, **tail):
        return []
    killed = jobs.filter(pilot_id=pilot_id, status=CANCELLED, kill_requested=True)
    if killed.exists():
        if tail:
            killed.update(**tail)
        return [KILL]
    current = jobs.values_list("status", "pilot_id").first()
    if current is None or current[1] != pilot_id:
        raise NotHeld(job_id, pilot_id)
    raise NotHeld(
        job_id, pilot_id, f"job {job_id} is {current[0]}: no pilot holds it, no heartbeat"
    )


def record_heartbeats(pilot_ids, now=None) -> int:
    """Heartbeats of every job these pilots are at work on (running or starting), at `now`
    (default: the clock's now); `pilot_ids` an iterable or a queryset of ids. Returns the
    number of jobs."""
    return Job.objects.filter(status__in=AT_WORK_STATES, pilot_id__in=pilot_ids).update(
        heartbeat=now or clock.now()
    )


# --- retention -----------------------------------------------------------------------------------


def purge_jobs(ids: Sequence[int]) -> list[int]:
    """Delete final jobs that no TaskQueue holds (any other id is kept), with their status
    history and every row pointing at them that Django knows of, other apps' too (a task's
    job row, a DAG node's link), as their relations say (cascade, set null, or nothing).
    Returns the ids deleted. Call in the transaction that locked the jobs (the retention
    cycle: SKIP LOCKED, so a job being moved is left for a later run)."""
    ids = sorted(set(ids))
    if not ids:
        return []
    plain = db.plain_dependents(Job)
    if plain is None:  # dependents with dependents of their own: Django's collector
        member = TaskQueueJob.objects.filter(job_id=models.OuterRef("pk"))
        doomed = Job.objects.filter(pk__in=ids, status__in=lifecycle.FINAL_STATES).exclude(
            models.Exists(member)
        )
        keys = ("pk", "owner_id", "owner_group_id", "site", "status")
        rows = sorted(doomed.values_list(*keys))
        gone = [r[0] for r in rows]
        failed = failures.keys(r[0] for r in rows if r[4] == FAILED)
        Job.objects.filter(pk__in=gone).delete()
        failures.record(failed, {})
        rollups.record(((o, g, site, st, "", "") for _, o, g, site, st in rows), clock.now())
        return gone
    job, pk = Job._meta.db_table, Job._meta.pk.column
    member_table = TaskQueueJob._meta.db_table
    final = sorted(lifecycle.FINAL_STATES)
    failed = failures.keys(ids)  # those failed, before they go
    with connection.cursor() as cur:
        # The job rows first (the foreign keys pointing at them are checked at commit), so
        # that one statement both decides and deletes.
        where, params = db.id_in(f'"{job}"."{pk}"', ids)
        cur.execute(
            f'DELETE FROM "{job}" WHERE {where} '
            f"AND status IN ({', '.join(['%s'] * len(final))}) "
            f'AND NOT EXISTS (SELECT 1 FROM "{member_table}" m WHERE m.job_id = "{job}"."{pk}") '
            f'RETURNING "{pk}", owner_id, owner_group_id, site, status',
            [*params, *final],
        )
        rows = cur.fetchall()
        gone = sorted(r[0] for r in rows)
        if not gone:
            return []
        failures.record({k: failed[k] for k in gone if k in failed}, {})
        rollups.record(((o, g, site, st, "", "") for _, o, g, site, st in rows), clock.now())
        for action, table, column in plain:
            where, params = db.id_in(f'"{column}"', gone)
            if action == "null":
                cur.execute(f'UPDATE "{table}" SET "{column}" = NULL WHERE {where}', params)
            else:
                cur.execute(f'DELETE FROM "{table}" WHERE {where}', params)
    return gone
