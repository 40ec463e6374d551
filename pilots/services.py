"""Pilots: the director cycle (plan, submit, record) and the status reports of pilots and of the
jobs they run. The submit pools and their backends: submit_pools.py (the simulated CEs and the
pilots' life there: simulation/simulated_ce.py)."""

from __future__ import annotations

import logging
import random
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, F

from core import clock, gdpconfig
from core.cycles import current_run_id, cycle
from matcher import dispatcher, matching
from matcher import services as job_services
from matcher.lifecycle import PILOT_END_STATES, PILOT_REPORTS, RUNNING_STATES
from matcher.models import ComputingElement, Job, TaskQueue
from matcher.taskqueue_priorities import taskqueue_loads
from pilots import director, local_pilots
from pilots.models import (
    PILOT_WAITING_STATES,
    Credential,
    DirectorDecision,
    Pilot,
    PilotStatus,
    PilotStatusHistory,
)
from pilots.submit_pools import (
    Backend,
    LocalBackend,
    PilotBatch,
    SubmitPool,
    Submitted,
    has_backend,
    open_backends,
    pilot_token,
)
from shares.models import GridGroup, User

log = logging.getLogger(__name__)
# The kinds of pools whose backends start real pilots here, on demand (director.on_demand).
ON_DEMAND_KINDS = ("local", "panda")


class PilotError(Exception):
    """A report the pilot's or the job's state does not allow (409)."""


# --- the director cycle: plan, submit, record ----------------------------------------------------


def _settings(running_jobs: int, waiting_jobs: int) -> tuple[director.Settings, float]:
    s = director.Settings(
        pilots_per_iteration=gdpconfig.get("pilotsPerIteration"),
        lowest_cpu_boost=gdpconfig.get("lowestCPUBoost"),
        extra_pilot_fraction=gdpconfig.get("extraPilotFraction"),
        extra_pilots=gdpconfig.get("extraPilots"),
        max_cpu=max(gdpconfig.get("CPUSegments")),
        private_pilot_fraction=gdpconfig.get("PrivatePilotFraction"),
        adaptive=gdpconfig.get("AdaptivePilotsPerIteration"),
        adaptive_max_factor=gdpconfig.get("AdaptiveMaxFactor"),
        site_director_cap=gdpconfig.get("SiteDirectorPilotCap"),
        per_job_term=gdpconfig.get("PilotsPerJobTerm"),
        on_demand_pools=tuple(
            pool
            for pool, kind in gdpconfig.get("SubmitPoolBackends").items()
            if kind in ON_DEMAND_KINDS
        ),
    )
    return s, director.effective_pilots_per_iteration(s, waiting_jobs, running_jobs)


def waiting_pilots(now) -> dict[int, int]:
    """Pilots still waiting in the middleware, per TaskQueue, submitted within
    maxPilotWaitingHours (older ones are taken to be lost)."""
    since = now - timedelta(hours=gdpconfig.get("maxPilotWaitingHours"))
    return dict(
        Pilot.objects.filter(status__in=PILOT_WAITING_STATES, submitted__gte=since)
        .order_by()
        .values_list("task_queue_id")
        .annotate(n=Count("*"))
    )


def _decide(now, rng: random.Random):
    """How many pilots each TaskQueue with waiting jobs gets (director.plan), before anything
    about where they go: (decisions, settings, pilotsPerIteration), or None when no job waits."""
    loads = [tq for tq in taskqueue_loads() if tq.jobs > 0]
    if not loads:
        return None
    rows = {
        r["id"]: r
        for r in TaskQueue.objects.filter(id__in=[t.id for t in loads]).values(
            "id", "priority", "cpu_time", "submit_pools", "pilot_types"
        )
    }
    states = [
        director.TaskQueueState(
            id=t.id,
            priority=rows[t.id]["priority"],
            jobs=t.jobs,
            cpu_time=rows[t.id]["cpu_time"],
            submit_pools=tuple(rows[t.id]["submit_pools"]),
            pilot_types=tuple(rows[t.id]["pilot_types"]),
        )
        for t in loads
        if t.id in rows
    ]
    running = Job.objects.filter(status__in=RUNNING_STATES).count()
    s, ppi = _settings(running, sum(t.jobs for t in states))
    return director.plan(states, waiting_pilots(now), s, rng, ppi), s, ppi


@dataclass
class DirectorView:
    """What the plan step reads, once per cycle rather than once per TaskQueue: the TaskQueues'
    definitions, owners, credentials, the submit pools' settings and the active CEs."""

    now: datetime
    private_pilot_fraction: float
    definitions: dict[int, matching.TQ]
    groups: dict[int, GridGroup]
    users: dict[int, str]
    credentials: dict[tuple[str, str], object]
    proxy_min_days: float  # a credential with less time left sends no pilot
    generic: tuple[str, str]  # the generic pilots' (DN, group)
    generic_user_id: int | None
    known_pools: set[str]
    backends_of: dict[str, str]
    default_pools: list[str]
    list_match: bool
    ces: list[ComputingElement]
    site_director_cap: bool = False

    @property
    def min_left(self) -> timedelta:
        return timedelta(days=self.proxy_min_days)


def _director_view(now, s: director.Settings) -> DirectorView:
    generic_dn = gdpconfig.get("GenericPilotDN")
    return DirectorView(
        now=now,
        private_pilot_fraction=s.private_pilot_fraction,
        definitions={tq.id: tq for tq in dispatcher.taskqueue_definitions()},
        groups={g.pk: g for g in GridGroup.objects.all()},
        users=dict(User.objects.values_list("pk", "dn")),
        credentials={
            (dn, group): expires
            for dn, group, expires in Credential.objects.values_list("dn", "group__name", "expires")
        },
        proxy_min_days=gdpconfig.get("PilotProxyMinDays"),
        generic=(generic_dn, gdpconfig.get("GenericPilotGroup")),
        # looked up once per cycle, not per TaskQueue
        generic_user_id=User.objects.filter(dn=generic_dn).values_list("pk", flat=True).first(),
        known_pools=set(gdpconfig.get("SubmitPools")),
        backends_of=gdpconfig.get("SubmitPoolBackends"),
        default_pools=gdpconfig.get("DefaultSubmitPools"),
        list_match=gdpconfig.get("ListMatch"),
        ces=list(dispatcher.active_ces()),
        site_director_cap=s.site_director_cap,
    )


@dataclass
class PlannedBatch:
    """One TaskQueue's pilots as planned: the batch for its pool, the pool's backend, and whose
    credential the pilots report with."""

    decision: director.Decision
    batch: PilotBatch
    backend: str
    user_id: int | None


def _skip(d: director.Decision, note: str) -> None:
    """The TaskQueue gets no pilot this cycle; the reason goes to its DirectorDecision."""
    d.notes.append(note)
    d.to_submit = 0


def _list_match(tq: matching.TQ, ces, private: bool) -> list[tuple[str, str, matching.Resource]]:
    """The active CEs whose pilots (private or generic, as chosen) the TaskQueue would take."""
    out = []
    for ce in ces:
        resource = matching.ce_resource(ce, private, tq.owner_id, tq.owner_group_id)
        if matching.first_failing_rule(tq, resource) is None:
            out.append((ce.site.name, ce.name, resource))
    return out


def plan_batch(d: director.Decision, view: DirectorView, rng) -> PlannedBatch | None:
    """Where a TaskQueue's pilots go: its submit pool, private or generic, the credential, the
    CEs of the list-match. None (the reason in d.notes) when it gets none this cycle."""
    if d.to_submit <= 0:
        return _skip(d, "nothing to submit" if d.cap > 0 else "over its cap")
    tq = view.definitions.get(d.tq.id)
    if tq is None:
        return _skip(d, "TaskQueue gone")
    d.submit_pool = director.choose_submit_pool(d.tq.submit_pools, view.default_pools, rng)
    if d.submit_pool not in view.known_pools or d.submit_pool not in view.backends_of:
        return _skip(d, f"unknown submit pool {d.submit_pool!r}")
    backend = view.backends_of[d.submit_pool]
    if not has_backend(backend):  # external
        return _skip(d, f"pool {d.submit_pool}: its pilots are started outside this director")
    d.private = director.submit_private_pilot(
        view.private_pilot_fraction, d.tq.pilot_types, d.tq.force_generic, rng
    )
    identity = (view.users.get(tq.owner_id) or "", tq.group_name) if d.private else view.generic
    expires = view.credentials.get(identity)
    if expires is None or expires - view.now < view.min_left:
        return _skip(
            d,
            f"no credential for {identity[0]} as {identity[1]} with "
            f"{view.proxy_min_days:g} days left",
        )
    fits = _list_match(tq, view.ces, d.private)
    if view.list_match and not fits:
        return _skip(d, "list-match: no active CE fits the TaskQueue")
    # The local pilot client is told the first fitting CE's limits, as it would read them there.
    first = fits[0][2] if fits else None
    batch = PilotBatch(
        tq_id=tq.id,
        n=d.to_submit,
        pool=d.submit_pool,
        private=d.private,
        owner_dn=identity[0],
        owner_group=identity[1],
        ces=[(site, ce) for site, ce, _ in fits],
        weight=d.lam,
        jdl=director.pilot_jdl(
            tq.id,
            identity[0],
            identity[1],
            d.private,
            d.submit_pool,
            [ce for _, ce, _ in fits],
            view.groups[tq.owner_group_id].job_sharing,
        ),
        resource={
            "cpu_time": first.cpu_time,
            "platform": sorted(first.platforms),
            "tag": sorted(first.tags),
        }
        if first
        else {},
    )
    user_id = tq.owner_id if d.private else view.generic_user_id
    return PlannedBatch(d, batch, backend, user_id)


def runnable_jobs_per_ce(decisions: list[director.Decision], ces) -> dict[str, int]:
    """Per active CE, the waiting jobs it could run: those of the TaskQueues (with waiting
    jobs, as the cycle counted them) that a pilot there may take, as the matcher sees them."""
    jobs = {d.tq.id: d.tq.jobs for d in decisions}
    return {
        ce.name: sum(
            jobs.get(tq.id, 0) for tq in dispatcher.matching_taskqueues(matching.ce_resource(ce))
        )
        for ce in ces
    }


@dataclass
class CycleSubmissions:
    """The submit step's state in one cycle: a backend of each kind the batches name; the
    pools, opened as batches come; the pilot credentials' tokens; the batches in flight. Every
    TaskQueue is planned first, the backends' waiting slots shared among the batches, then each
    is handed over."""

    backends: dict[str, Backend]
    pools: dict[str, SubmitPool] = field(default_factory=dict)
    tokens: dict[int | None, str] = field(default_factory=dict)
    in_flight: list[tuple[PlannedBatch, Future]] = field(default_factory=list)
    capped_by_jobs: bool = False  # SiteDirectorPilotCap applied to the backends' slots


def submit_batch(planned: PlannedBatch, subs: CycleSubmissions, rng: random.Random) -> None:
    """Hand the batch to its submit pool; a full pool (totalThreadsInPool) refuses it."""
    d, batch, pool = planned.decision, planned.batch, planned.decision.submit_pool
    backend = subs.backends[planned.backend]
    if backend.logs_in and planned.user_id not in subs.tokens:
        subs.tokens[planned.user_id] = pilot_token(planned.user_id)
    batch.token = subs.tokens.get(planned.user_id, "")
    if pool not in subs.pools:
        subs.pools[pool] = SubmitPool(
            pool,
            backend,
            gdpconfig.get("maxThreadsInPool"),
            gdpconfig.get("totalThreadsInPool"),
        )
    future = subs.pools[pool].submit(batch, random.Random(rng.random()))
    if future is None:
        _skip(d, f"submit pool {pool} {director.POOL_FULL}")
        return
    subs.in_flight.append((planned, future))


def collect_submitted(subs: CycleSubmissions) -> list[tuple[PlannedBatch, Submitted, str]]:
    """Wait for every batch in flight, then close the pools: (batch, pilot, grid type) for
    each pilot a CE took. A decision keeps the number its CEs really took."""
    out = []
    for planned, future in subs.in_flight:
        d = planned.decision
        try:
            done = future.result()
        except Exception as exc:  # a backend failure costs this TaskQueue its pilots, not the cycle
            log.exception("submission failed")
            _skip(d, f"submission failed: {exc}")
            continue
        if len(done) < d.to_submit:
            why = ", or no more waiting jobs than pilots there" if subs.capped_by_jobs else ""
            d.notes.append(f"CEs took {len(done)} of {d.to_submit} (no free waiting slots{why})")
        d.to_submit = len(done)
        grid_type = subs.pools[d.submit_pool].backend.grid_type
        out += [(planned, sub, grid_type) for sub in done]
    for pool in subs.pools.values():
        pool.close()
    return out


def _new_pilot(planned: PlannedBatch, sub: Submitted, grid_type: str, now, run_id):
    batch = planned.batch
    return Pilot(
        reference=sub.reference,
        task_queue_id=batch.tq_id,
        owner_dn=batch.owner_dn,
        owner_group=batch.owner_group,
        private=batch.private,
        broker=batch.pool,
        grid_type=grid_type,
        submit_pool=batch.pool,
        requirements=batch.jdl,
        site=sub.site,
        ce=sub.ce,
        status=PilotStatus.SUBMITTED,
        submitted=now,
        status_changed=now,
        # Only a backend that moves its pilots along says when; real pilots report.
        next_event=now + sub.moves_in if sub.moves_in is not None else None,
        director_run=run_id,
        credential_user_id=planned.user_id,
    )


def _decision_row(d: director.Decision, now, run_id) -> DirectorDecision:
    return DirectorDecision(
        cycle_run=run_id or 0,
        at=now,
        task_queue_id=d.tq.id,
        priority=d.tq.priority,
        jobs=d.tq.jobs,
        cpu_time=d.tq.cpu_time,
        lam=d.lam,
        drawn=d.drawn,
        cap=d.cap,
        waiting_pilots=d.waiting_pilots,
        submitted=d.to_submit,
        submit_pool=d.submit_pool,
        private=d.private,
        skipped="; ".join(d.notes)[:255],
    )


def record_cycle(decisions, submitted, now, run_id) -> list[Pilot]:
    """The pilots the CEs took, their first status, and every decision (why, when none went),
    in one transaction."""
    pilots = [_new_pilot(p, sub, grid_type, now, run_id) for p, sub, grid_type in submitted]
    with transaction.atomic():
        created = Pilot.objects.bulk_create(pilots, batch_size=2000)
        PilotStatusHistory.objects.bulk_create(
            [
                PilotStatusHistory(
                    pilot=p, at=now, to_status=PilotStatus.SUBMITTED, reason=f"pool {p.submit_pool}"
                )
                for p in created
            ],
            batch_size=2000,
        )
        DirectorDecision.objects.bulk_create(
            [_decision_row(d, now, run_id) for d in decisions], batch_size=2000
        )
    return created


def end_unstarted_local_pilots() -> int:
    """Pilots started on this machine that will never register (their process ended, or it
    stayed silent for LocalPilotStartSeconds) are Aborted with the reason and their last output
    line, so their TaskQueue is no longer "over its cap" with pilots that are not coming. A
    PanDA pilot counts as started once its launcher has started it: its launcher's log is read."""
    from pilots.panda_pilots import GRID_TYPE as PANDA  # panda_pilots imports this module

    submitted = Pilot.objects.filter(
        grid_type__in=[LocalBackend.grid_type, PANDA], status=PilotStatus.SUBMITTED
    ).values_list("pk", "reference", "submitted", "grid_type")
    logs = [
        (pk, f"{ref}-launcher" if grid_type == PANDA else ref, at)
        for pk, ref, at, grid_type in submitted
    ]
    ended = local_pilots.unstarted(logs, gdpconfig.get("LocalPilotStartSeconds"))
    for pilot in ended:
        try:
            set_pilot_status(pilot.pilot_id, PilotStatus.ABORTED, pilot.reason)
        except PilotError:
            continue  # it reported meanwhile
    return len(ended)


@cycle("director")
def director_cycle(rng: random.Random | None = None) -> dict:
    """The seed's TaskQueue director, one iteration: how many pilots per TaskQueue; per
    TaskQueue where they go (plan_batch), handed at once to its pool (submit_batch); then the
    pilots the CEs took and every decision are recorded."""
    rng = rng or random.Random()
    now = clock.now()
    run_id = current_run_id("director")
    end_unstarted_local_pilots()
    decided = _decide(now, rng)
    if decided is None:
        return {"taskqueues": 0, "pilots": 0}
    decisions, s, ppi = decided
    view = _director_view(now, s)
    planned = [p for p in (plan_batch(d, view, rng) for d in decisions) if p is not None]
    subs = CycleSubmissions(open_backends({p.backend for p in planned}))
    capping = [b for b in subs.backends.values() if b.knows_waiting_slots]
    if view.site_director_cap and capping:  # no more pilots at a CE than the jobs it could run
        runnable = runnable_jobs_per_ce(decisions, view.ces)
        for backend in capping:
            backend.cap_by_runnable_jobs(runnable)
        subs.capped_by_jobs = True
    # The CEs' free waiting slots are shared among all the cycle's batches in proportion to the
    # pilots each wants, not taken by the TaskQueues handed over first.
    for kind, backend in subs.backends.items():
        backend.reserve([p.batch for p in planned if p.backend == kind], rng)
    for p in planned:
        submit_batch(p, subs, rng)
    created = record_cycle(decisions, collect_submitted(subs), now, run_id)
    for backend in subs.backends.values():
        backend.start()
    return {
        "taskqueues": len(decisions),
        "pilots": len(created),
        "pilots_per_iteration": round(ppi, 3),
        "skipped": sum(1 for d in decisions if d.notes and not d.to_submit and d.drawn),
    }


# --- status reports ------------------------------------------------------------------------------

PILOT_TRANSITIONS = {
    PilotStatus.SUBMITTED: {
        "Ready",
        "Scheduled",
        "Waiting",
        "Running",
        "Done",
        "Failed",
        "Aborted",
    },
    PilotStatus.READY: {"Scheduled", "Waiting", "Running", "Done", "Failed", "Aborted"},
    PilotStatus.SCHEDULED: {"Waiting", "Running", "Done", "Failed", "Aborted"},
    PilotStatus.WAITING: {"Running", "Done", "Failed", "Aborted"},
    PilotStatus.RUNNING: {"Done", "Failed", "Aborted"},
}
JOB_TRANSITIONS = PILOT_REPORTS  # the pilot reports' part of lifecycle.TRANSITIONS


def set_pilot_status(pilot_id: int, to: str, reason: str = "", next_event=None) -> Pilot:
    now = clock.now()
    with transaction.atomic():
        pilot = Pilot.objects.select_for_update().get(pk=pilot_id)
        if to == pilot.status:
            return pilot
        if to not in PILOT_TRANSITIONS.get(pilot.status, set()):
            raise PilotError(f"pilot {pilot.reference} is {pilot.status}, it cannot become {to}")
        PilotStatusHistory.objects.create(
            pilot=pilot, at=now, from_status=pilot.status, to_status=to, reason=reason[:255]
        )
        pilot.status, pilot.status_changed, pilot.next_event = to, now, next_event
        pilot.save(update_fields=["status", "status_changed", "next_event"])
    return pilot


def _not_held(job_id: int, pilot_id: int | None) -> PilotError:
    reference = Pilot.objects.filter(pk=pilot_id).values_list("reference", flat=True).first()
    return PilotError(f"job {job_id} is no longer held by pilot {reference or pilot_id}")


def report_job(
    job_id: int,
    to: str,
    reason: str = "",
    pilot_id: int | None = None,
    results: dict | None = None,
) -> Job:
    """A pilot's report on the job it runs, through the job lifecycle's owner
    (matcher.services.report_job, `results` the payload's exit information): only while that
    pilot still holds the job, and only along lifecycle.PILOT_REPORTS (or `cancelled`,
    acknowledging a kill); else PilotError, nothing written. A job the pilot ended counts
    in the pilot's jobs_done."""
    try:
        job = job_services.report_job(job_id, to, reason, pilot_id=pilot_id, results=results)
    except job_services.NotHeld as exc:
        if exc.pilot_id is not None and str(exc).endswith(f"pilot {exc.pilot_id}"):
            raise _not_held(exc.job_id, exc.pilot_id) from None
        raise PilotError(str(exc)) from None
    except job_services.MoveRefused as exc:
        raise PilotError(str(exc)) from None
    if job.status in PILOT_END_STATES and job.pilot_id:
        Pilot.objects.filter(pk=job.pilot_id).update(jobs_done=F("jobs_done") + 1)
    return job


def heartbeat(
    job_id: int, pilot_id: int | None = None, output_tail: str | None = None
) -> list[str]:
    """The job's heartbeat moves (matcher.services.record_heartbeat), with the payload's last
    lines of output. With a `pilot_id` (a pilot's report), only while that pilot holds the
    job in a state a pilot holds it in: else PilotError, nothing moved. Returns the commands
    for the pilot (["kill"] for a job killed while it held it)."""
    try:
        return job_services.record_heartbeat(job_id, pilot_id, output_tail)
    except job_services.NotHeld as exc:
        if str(exc).endswith(f"pilot {exc.pilot_id}"):
            raise _not_held(exc.job_id, exc.pilot_id) from None
        raise PilotError(str(exc)) from None


def pilot_may_report(user, pilot: Pilot) -> bool:
    return user.is_staff or (
        pilot.credential_user_id is not None and pilot.credential_user_id == user.pk
    )
