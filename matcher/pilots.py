"""Pilots: the director cycle, submit pools and their backends, the simulated CE, and the
status reports of pilots and of the jobs they run."""

from __future__ import annotations

import logging
import random
import subprocess
import sys
import threading
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.db import transaction
from django.db.models import Count

from config import clock, gdpconfig
from config.cycles import current_run_id, cycle
from matcher import director, match, matching
from matcher.models import (
    PILOT_FINAL_STATES,
    PILOT_WAITING_STATES,
    ComputingElement,
    Credential,
    DirectorDecision,
    Job,
    JobStatus,
    JobStatusHistory,
    Pilot,
    PilotStatus,
    PilotStatusHistory,
    TaskQueue,
)
from matcher.priorities import RUNNING_STATES, taskqueue_loads
from shares.models import GridGroup, User

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parent.parent
MAX_JOBS_PER_PILOT = 5  # a pilot asks again after each job, this many times at most


class PilotError(Exception):
    """A report the pilot's or the job's state does not allow (409)."""


# --- submission ---------------------------------------------------------------------------------


@dataclass
class PilotBatch:
    """What one submission hands to a pool: n pilots for one TaskQueue."""

    tq_id: int
    n: int
    pool: str
    private: bool
    owner_dn: str
    owner_group: str
    ces: list[tuple[str, str]]  # (site, CE) the list-match allows
    jdl: str
    token: str = ""
    resource: dict = field(default_factory=dict)


@dataclass
class Submitted:
    reference: str
    site: str
    ce: str


class SimulatedBackend:
    """A simulated CE: accepts pilots up to each CE's free waiting slots."""

    grid_type = "Simulated"

    def __init__(self, free_slots: dict[str, int]):
        self.free = free_slots
        self.lock = threading.Lock()

    def submit(self, batch: PilotBatch, rng: random.Random) -> list[Submitted]:
        out = []
        for _ in range(batch.n):
            with self.lock:
                open_ces = [(s, c) for s, c in batch.ces if self.free.get(c, 0) > 0]
                if not open_ces:
                    break
                site, ce = rng.choice(open_ces)
                self.free[ce] -= 1
            out.append(Submitted(f"sim://{ce}/{uuid.uuid4().hex[:12]}", site, ce))
        return out


class LocalBackend:
    """Starts the real pilot client (`manage.py pilot`) as a process on this machine."""

    grid_type = "Local"

    def submit(self, batch: PilotBatch, rng: random.Random) -> list[Submitted]:
        out = []
        for _ in range(batch.n):
            site, ce = rng.choice(batch.ces) if batch.ces else ("any", "")
            ref = f"local://{ce or 'localhost'}/{uuid.uuid4().hex[:12]}"
            args = [
                sys.executable,
                str(ROOT / "manage.py"),
                "pilot",
                "--url",
                gdpconfig.get("LocalPilotURL"),
                "--token",
                batch.token,
                "--site",
                site,
                "--reference",
                ref,
                "--max-seconds",
                str(gdpconfig.get("LocalPilotMaxSeconds")),
            ]
            if ce:
                args += ["--ce", ce]
            for key, flag in (("cpu_time", "--cpu-time"),):
                if key in batch.resource:
                    args += [flag, str(batch.resource[key])]
            for value in batch.resource.get("platform", []):
                args += ["--platform", value]
            for value in batch.resource.get("tag", []):
                args += ["--tag", value]
            subprocess.Popen(
                args,
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            out.append(Submitted(ref, site, ce))
        return out


class SubmitPool:
    """A bounded pool of submission threads (minThreadsInPool, maxThreadsInPool,
    totalThreadsInPool): at most `total` batches queued; more wait for the next cycle."""

    def __init__(self, name: str, backend, max_threads: int, total: int):
        self.name = name
        self.backend = backend
        self.executor = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix=name)
        self.slots = threading.BoundedSemaphore(total)

    def submit(self, batch: PilotBatch, rng: random.Random):
        if not self.slots.acquire(blocking=False):
            return None

        def run():
            try:
                return self.backend.submit(batch, rng)
            finally:
                self.slots.release()

        return self.executor.submit(run)

    def close(self):
        self.executor.shutdown(wait=True)


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


def _credentials(now) -> dict[tuple[str, str], object]:
    return {
        (dn, group): expires
        for dn, group, expires in Credential.objects.values_list("dn", "group__name", "expires")
    }


@cycle("director")
def director_cycle(rng: random.Random | None = None) -> dict:
    """The seed's TaskQueue director, one iteration."""
    rng = rng or random.Random()
    now = clock.now()
    run_id = current_run_id("director")
    loads = [tq for tq in taskqueue_loads() if tq.jobs > 0]
    if not loads:
        return {"taskqueues": 0, "pilots": 0}
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
    decisions = director.plan(states, waiting_pilots(now), s, rng, ppi)

    definitions = {tq.id: tq for tq in match.taskqueue_definitions()}
    groups = {g.pk: g for g in GridGroup.objects.all()}
    users = dict(User.objects.values_list("pk", "dn"))
    credentials = _credentials(now)
    min_left = timedelta(days=gdpconfig.get("PilotProxyMinDays"))
    generic_dn, generic_group = gdpconfig.get("GenericPilotDN"), gdpconfig.get("GenericPilotGroup")
    generic_user_id = _generic_user_id(generic_dn)  # once per cycle, not per TaskQueue
    known_pools = set(gdpconfig.get("SubmitPools"))
    backends_of = gdpconfig.get("SubmitPoolBackends")
    ce_list = list(match.ce_resources())
    ce_rows = {c.name: c for c in ComputingElement.objects.all()}
    busy = Counter(
        Pilot.objects.filter(status__in=PILOT_WAITING_STATES).values_list("ce", flat=True)
    )
    simulated = SimulatedBackend(
        {name: max(0, c.max_waiting_pilots - busy[name]) for name, c in ce_rows.items()}
    )
    pools: dict[str, SubmitPool] = {}
    tokens: dict[int, str] = {}
    pending = []
    for d in decisions:
        if d.to_submit <= 0:
            d.notes.append("nothing to submit" if d.cap > 0 else "over its cap")
            d.to_submit = 0
            continue
        tq = definitions.get(d.tq.id)
        if tq is None:
            d.notes.append("TaskQueue gone")
            d.to_submit = 0
            continue
        d.submit_pool = director.choose_submit_pool(
            d.tq.submit_pools, gdpconfig.get("DefaultSubmitPools"), rng
        )
        if d.submit_pool not in known_pools or d.submit_pool not in backends_of:
            d.notes.append(f"unknown submit pool {d.submit_pool!r}")
            d.to_submit = 0
            continue
        if backends_of[d.submit_pool] == "external":
            d.notes.append(f"pool {d.submit_pool}: its pilots are started outside this director")
            d.to_submit = 0
            continue
        d.private = director.submit_private_pilot(
            s.private_pilot_fraction, d.tq.pilot_types, d.tq.force_generic, rng
        )
        owner_dn = users.get(tq.owner_id) or ""
        identity = (owner_dn, tq.group_name) if d.private else (generic_dn, generic_group)
        expires = credentials.get(identity)
        if expires is None or expires - now < min_left:
            d.notes.append(
                f"no credential for {identity[0]} as {identity[1]} with "
                f"{gdpconfig.get('PilotProxyMinDays'):g} days left"
            )
            d.to_submit = 0
            continue
        resource_of = {}
        ces = []
        for site, ce, res in ce_list:
            pilot_res = matching.Resource(
                site=res.site,
                grid_ce=res.grid_ce,
                setup="any",
                cpu_time=res.cpu_time,
                platforms=res.platforms,
                tags=res.tags,
                pilot_type="private" if d.private else "generic",
                owner_id=tq.owner_id if d.private else None,
                owner_group_id=tq.owner_group_id if d.private else None,
                private=d.private,
            )
            if matching.first_failing_rule(tq, pilot_res) is None:
                ces.append((site, ce))
                resource_of[ce] = res
        if gdpconfig.get("ListMatch") and not ces:
            d.notes.append("list-match: no active CE fits the TaskQueue")
            d.to_submit = 0
            continue
        backend_name = backends_of[d.submit_pool]
        user_id = tq.owner_id if d.private else generic_user_id
        if backend_name == "local" and user_id not in tokens:
            tokens[user_id] = _token_for(user_id)
        first_res = resource_of[ces[0][1]] if ces else None
        batch = PilotBatch(
            tq_id=tq.id,
            n=d.to_submit,
            pool=d.submit_pool,
            private=d.private,
            owner_dn=identity[0],
            owner_group=identity[1],
            ces=ces,
            jdl=director.pilot_jdl(
                tq.id,
                identity[0],
                identity[1],
                d.private,
                d.submit_pool,
                [c for _, c in ces],
                groups[tq.owner_group_id].job_sharing,
            ),
            token=tokens.get(user_id, ""),
            resource={
                "cpu_time": first_res.cpu_time,
                "platform": sorted(first_res.platforms),
                "tag": sorted(first_res.tags),
            }
            if first_res
            else {},
        )
        if d.submit_pool not in pools:
            backend = simulated if backend_name == "simulated" else LocalBackend()
            pools[d.submit_pool] = SubmitPool(
                d.submit_pool,
                backend,
                gdpconfig.get("maxThreadsInPool"),
                gdpconfig.get("totalThreadsInPool"),
            )
        future = pools[d.submit_pool].submit(batch, random.Random(rng.random()))
        if future is None:
            d.notes.append(f"submit pool {d.submit_pool} is full (totalThreadsInPool)")
            d.to_submit = 0
            continue
        pending.append((d, batch, future, user_id))

    pilots = []
    sim = gdpconfig.get("SimulatedPilotSeconds")
    for d, batch, future, user_id in pending:
        try:
            done = future.result()
        except Exception as exc:  # a backend failure costs this TaskQueue its pilots, not the cycle
            log.exception("submission failed")
            d.notes.append(f"submission failed: {exc}")
            d.to_submit = 0
            continue
        if len(done) < d.to_submit:
            d.notes.append(f"CEs took {len(done)} of {d.to_submit} (no free waiting slots)")
        d.to_submit = len(done)
        backend = pools[d.submit_pool].backend
        for sub in done:
            pilots.append(
                Pilot(
                    reference=sub.reference,
                    task_queue_id=batch.tq_id,
                    owner_dn=batch.owner_dn,
                    owner_group=batch.owner_group,
                    private=batch.private,
                    broker=d.submit_pool,
                    grid_type=backend.grid_type,
                    submit_pool=d.submit_pool,
                    requirements=batch.jdl,
                    site=sub.site,
                    ce=sub.ce,
                    status=PilotStatus.SUBMITTED,
                    submitted=now,
                    status_changed=now,
                    next_event=now + timedelta(seconds=float(sim.get("Submitted", 30)))
                    if backend.grid_type == "Simulated"
                    else None,
                    director_run=run_id,
                    credential_user_id=user_id,
                )
            )
    for pool in pools.values():
        pool.close()
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
            [
                DirectorDecision(
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
                for d in decisions
            ],
            batch_size=2000,
        )
    return {
        "taskqueues": len(decisions),
        "pilots": len(created),
        "pilots_per_iteration": round(ppi, 3),
        "skipped": sum(1 for d in decisions if d.notes and not d.to_submit and d.drawn),
    }


def _generic_user_id(dn: str) -> int | None:
    return User.objects.filter(dn=dn).values_list("pk", flat=True).first()


def _token_for(user_id: int | None) -> str:
    from rest_framework.authtoken.models import Token

    if user_id is None:
        return ""
    return Token.objects.get_or_create(user_id=user_id)[0].key


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
JOB_TRANSITIONS = {
    JobStatus.SENT: {JobStatus.STARTING, JobStatus.RUNNING, JobStatus.FAILED},
    JobStatus.STARTING: {JobStatus.RUNNING, JobStatus.FAILED},
    JobStatus.RUNNING: {
        JobStatus.HOLDING,
        JobStatus.TRANSFERRING,
        JobStatus.FINISHED,
        JobStatus.FAILED,
    },
    JobStatus.HOLDING: {JobStatus.TRANSFERRING, JobStatus.FINISHED, JobStatus.FAILED},
    JobStatus.TRANSFERRING: {JobStatus.FINISHED, JobStatus.FAILED},
}


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


def _not_held(job_id: int, pilot_id: int) -> PilotError:
    reference = Pilot.objects.filter(pk=pilot_id).values_list("reference", flat=True).first()
    return PilotError(f"job {job_id} is no longer held by pilot {reference or pilot_id}")


def report_job(job_id: int, to: str, reason: str = "", pilot_id: int | None = None) -> Job:
    """A pilot's report on the job it runs: the job moves along PanDA's states. With a
    `pilot_id`, only while that pilot still holds the job (checked under the lock: a
    reschedule may have revoked the claim since the caller looked)."""
    now = clock.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if pilot_id is not None and job.pilot_id != pilot_id:
            raise _not_held(job_id, pilot_id)
        if to not in JOB_TRANSITIONS.get(job.status, set()):
            raise PilotError(f"job {job_id} is {job.status}, it cannot become {to}")
        JobStatusHistory.objects.create(
            job=job, at=now, from_status=job.status, to_status=to, reason=reason[:255]
        )
        job.status, job.status_reason, job.status_changed, job.heartbeat = (
            to,
            reason[:255],
            now,
            now,
        )
        job.save(update_fields=["status", "status_reason", "status_changed", "heartbeat"])
    if to in (JobStatus.FINISHED, JobStatus.FAILED) and job.pilot_id:
        from django.db.models import F

        Pilot.objects.filter(pk=job.pilot_id).update(jobs_done=F("jobs_done") + 1)
    return job


def heartbeat(job_id: int, pilot_id: int | None = None) -> None:
    """The job's heartbeat moves. With a `pilot_id` (a pilot's report), only while that pilot
    holds the job in a state a pilot holds it in: else PilotError, nothing moved."""
    jobs = Job.objects.filter(pk=job_id)
    if pilot_id is None:
        jobs.update(heartbeat=clock.now())
        return
    if jobs.filter(pilot_id=pilot_id, status__in=list(JOB_TRANSITIONS)).update(
        heartbeat=clock.now()
    ):
        return
    current = jobs.values_list("status", "pilot_id").first()
    if current is None or current[1] != pilot_id:
        raise _not_held(job_id, pilot_id)
    raise PilotError(f"job {job_id} is {current[0]}: no pilot holds it, no heartbeat")


def pilot_may_report(user, pilot: Pilot) -> bool:
    return user.is_staff or (
        pilot.credential_user_id is not None and pilot.credential_user_id == user.pk
    )


# --- the simulated CE ----------------------------------------------------------------------------


def _pilot_resource(pilot: Pilot, ces: dict) -> matching.Resource | None:
    ce = ces.get(pilot.ce)
    if ce is None:
        return None
    owner = User.objects.filter(dn=pilot.owner_dn).values_list("pk", flat=True).first()
    group = GridGroup.objects.filter(name=pilot.owner_group).values_list("pk", flat=True).first()
    return matching.Resource(
        site=ce.site.name,
        grid_ce=ce.name,
        setup="any",
        cpu_time=ce.cpu_time_limit,
        platforms=frozenset(ce.platforms),
        tags=frozenset(ce.tags),
        pilot_type="private" if pilot.private else "generic",
        owner_id=owner if pilot.private else None,
        owner_group_id=group if pilot.private else None,
        private=pilot.private,
    )


def _start_next_job(pilot: Pilot, ces, sim, rng, now) -> bool:
    """The pilot asks the matcher; a job it gets starts running on the simulated CE."""
    resource = _pilot_resource(pilot, ces)
    found = None
    if resource is not None:
        found = match.match_job(resource, pilot.reference, rng=rng, pilot_id=pilot.pk)
    if found is None:
        return False
    job = found.job
    report_job(job.id, JobStatus.RUNNING, f"running on {pilot.ce}")
    runtime = max(1.0, job.cpu_time * float(sim.get("CPUScale", 0.01)))
    Pilot.objects.filter(pk=pilot.pk).update(next_event=now + timedelta(seconds=runtime))
    return True


@cycle("pilot_status")
def simulated_ce_cycle(rng: random.Random | None = None, limit: int = 2000) -> dict:
    """Move the simulated CEs' pilots along: Submitted -> Scheduled -> Running (the pilot
    matches a job and runs it for CPUTime x CPUScale seconds) -> the job finishes or fails ->
    the pilot asks again, up to MAX_JOBS_PER_PILOT jobs -> Done; some pilots abort."""
    rng = rng or random.Random()
    now = clock.now()
    sim = gdpconfig.get("SimulatedPilotSeconds")
    ces = {c.name: c for c in ComputingElement.objects.select_related("site")}
    due = list(
        Pilot.objects.filter(grid_type="Simulated", next_event__lte=now)
        .exclude(status__in=PILOT_FINAL_STATES)
        .order_by("next_event")[:limit]
    )
    counts: Counter = Counter()
    for pilot in due:
        if pilot.status == PilotStatus.SUBMITTED:
            if rng.random() < float(sim.get("Aborted", 0.05)):
                set_pilot_status(pilot.pk, PilotStatus.ABORTED, "aborted by the CE")
                counts["aborted"] += 1
            else:
                wait = timedelta(seconds=float(sim.get("Scheduled", 60)))
                set_pilot_status(pilot.pk, PilotStatus.SCHEDULED, "queued at the CE", now + wait)
                counts["scheduled"] += 1
        elif pilot.status in (PilotStatus.SCHEDULED, PilotStatus.READY, PilotStatus.WAITING):
            set_pilot_status(pilot.pk, PilotStatus.RUNNING, "started on a worker node", now)
            pilot.refresh_from_db()
            if _start_next_job(pilot, ces, sim, rng, now):
                counts["jobs_started"] += 1
            else:
                set_pilot_status(pilot.pk, PilotStatus.DONE, "no job for it")
                counts["done"] += 1
        elif pilot.status == PilotStatus.RUNNING:
            current = Job.objects.filter(pilot=pilot, status=JobStatus.RUNNING).first()
            if current is not None:
                failed = rng.random() < float(sim.get("JobFailed", 0.05))
                report_job(
                    current.pk,
                    JobStatus.FAILED if failed else JobStatus.FINISHED,
                    "payload failed" if failed else "payload done",
                )
                counts["jobs_failed" if failed else "jobs_finished"] += 1
                pilot.refresh_from_db()
            if pilot.jobs_done < MAX_JOBS_PER_PILOT and _start_next_job(pilot, ces, sim, rng, now):
                counts["jobs_started"] += 1
            else:
                set_pilot_status(pilot.pk, PilotStatus.DONE, f"ran {pilot.jobs_done} jobs")
                counts["done"] += 1
    return dict(counts)


def pilot_summary() -> list[dict]:
    """Per site and CE: pilots per status, and jobs per pilot."""
    rows: dict[tuple[str, str], dict] = defaultdict(lambda: Counter())
    for site, ce, status, n in (
        Pilot.objects.order_by().values_list("site", "ce", "status").annotate(n=Count("*"))
    ):
        rows[(site, ce)][status] += n
    jobs = dict(
        Pilot.objects.order_by().values_list("ce").annotate(j=Count("*")).values_list("ce", "j")
    )
    done = defaultdict(int)
    for ce, n in Pilot.objects.values_list("ce", "jobs_done"):
        done[ce] += n
    return [
        {
            "site": site,
            "ce": ce,
            "counts": {s.value: counts.get(s.value, 0) for s in PilotStatus},
            "jobs_per_pilot": done[ce] / jobs[ce] if jobs.get(ce) else 0.0,
        }
        for (site, ce), counts in sorted(rows.items())
    ]
