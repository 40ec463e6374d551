"""The simulated CEs: the backend of the "simulated" submit pools (gLite and SAM in the seed),
which takes pilots up to each CE's free waiting slots, and the `pilot_status` cycle, which moves
their pilots along as a CE and its worker nodes would (docs/user-guide.md, The demo world).

The director reaches the backend through settings.SUBMIT_POOL_BACKENDS, never through an import
of this module; the cycle is registered when the simulation app is ready."""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter
from datetime import timedelta

from core import clock, gdpconfig
from core.cycles import cycle
from matcher import dispatcher, errors, matching
from matcher.models import ComputingElement, Job, JobStatus
from pilots import output as pilot_output
from pilots.models import PILOT_FINAL_STATES, PILOT_WAITING_STATES, Pilot, PilotStatus
from pilots.services import heartbeat, report_job, set_pilot_status
from pilots.submit_pools import Backend, PilotBatch, Submitted
from shares.models import GridGroup, User
from simulation import failures

GRID_TYPE = "Simulated"
MAX_JOBS_PER_PILOT = 5  # a pilot asks again after each job, this many times at most


class SimulatedBackend(Backend):
    """A simulated CE: accepts pilots up to each CE's free waiting slots; its pilots stay
    Submitted for `queued` (SimulatedPilotSeconds), then the pilot_status cycle moves them."""

    grid_type = GRID_TYPE
    knows_waiting_slots = True

    def __init__(
        self,
        free_slots: dict[str, int],
        waiting: dict[str, int] | None = None,
        queued: timedelta = timedelta(seconds=30),
    ):
        self.free = free_slots
        self.waiting = dict(waiting or {})  # the pilots waiting at each CE now
        self.queued = queued
        self.lock = threading.Lock()

    def cap_by_runnable_jobs(self, runnable: dict[str, int]) -> None:
        """DIRAC's SiteDirector rule: a CE takes no more new pilots than the waiting jobs it
        could run (`runnable`) less the pilots already waiting there."""
        with self.lock:
            for ce, free in self.free.items():
                self.free[ce] = max(0, min(free, runnable.get(ce, 0) - self.waiting.get(ce, 0)))

    def reserve(self, batches: list[PilotBatch], rng: random.Random) -> None:
        """Share the free waiting slots among the cycle's batches before any is submitted
        (share_waiting_slots): each batch then submits on the slots it was given."""
        with self.lock:
            given = share_waiting_slots(
                [(b.n, b.weight, [c for _, c in b.ces]) for b in batches], self.free, rng
            )
        for batch, ces in zip(batches, given, strict=True):
            batch.slots = ces

    def _pilot(self, site: str, ce: str) -> Submitted:
        return Submitted(f"sim://{ce}/{uuid.uuid4().hex[:12]}", site, ce, moves_in=self.queued)

    def submit(self, batch: PilotBatch, rng: random.Random) -> list[Submitted]:
        if batch.slots is not None:
            site_of = {c: s for s, c in batch.ces}
            return [self._pilot(site_of[ce], ce) for ce in batch.slots]
        out = []
        for _ in range(batch.n):
            with self.lock:
                open_ces = [(s, c) for s, c in batch.ces if self.free.get(c, 0) > 0]
                if not open_ces:
                    break
                site, ce = rng.choice(open_ces)
                self.free[ce] -= 1
            out.append(self._pilot(site, ce))
        return out


def share_waiting_slots(
    requests: list[tuple[int, float, list[str]]], free: dict[str, int], rng: random.Random
) -> list[list[str]]:
    """The CEs' free waiting slots (`free`, taken from) shared among the batches of one cycle,
    each (pilots wanted, weight, CEs it may go to): the pilots of all batches take turns in
    proportion to the weights (the director's lambda: pilot j of a batch of weight w comes at
    (j + u) / w, u uniform per batch, so a batch of twice the weight comes twice as often), each
    taking a free slot on one of its CEs at random, until its batch has the pilots it wants.
    Where slots are scarce every TaskQueue gets its share of them, rather than the TaskQueues
    handed over first taking them all. Returns the CEs given to each batch."""
    left = sum(max(0, v) for v in free.values())
    turns = []
    for i, (n, w, _) in enumerate(requests):
        u = rng.random()
        turns += [((j + u) / max(w, 1e-12), i) for j in range(min(n, left))]
    turns.sort()
    out: list[list[str]] = [[] for _ in requests]
    for _, i in turns:
        if left <= 0:
            break
        open_ces = [c for c in requests[i][2] if free.get(c, 0) > 0]
        if open_ces:
            ce = rng.choice(open_ces)
            free[ce] -= 1
            left -= 1
            out[i].append(ce)
    return out


def simulated_ces() -> SimulatedBackend:
    """The simulated CEs for one director cycle, each with its free waiting slots now:
    MaxWaitingPilots less the pilots still waiting there (settings.SUBMIT_POOL_BACKENDS)."""
    ce_rows = {c.name: c for c in ComputingElement.objects.all()}
    busy = Counter(
        Pilot.objects.filter(status__in=PILOT_WAITING_STATES).values_list("ce", flat=True)
    )
    # How long a new pilot stays Submitted, read once for the whole cycle.
    queued = float(gdpconfig.get("SimulatedPilotSeconds").get("Submitted", 30))
    return SimulatedBackend(
        {name: max(0, c.max_waiting_pilots - busy[name]) for name, c in ce_rows.items()},
        {name: busy[name] for name in ce_rows},
        timedelta(seconds=queued),
    )


def free_job_slots(ces: dict[str, ComputingElement]) -> dict[str, int]:
    """Per simulated CE, its job slots (max_running_pilots: enforced as its batch system would,
    a scheduled pilot stays queued until one is free) less the pilots running there now."""
    running = Counter(
        Pilot.objects.filter(status=PilotStatus.RUNNING, ce__in=list(ces)).values_list(
            "ce", flat=True
        )
    )
    return {name: ce.max_running_pilots - running[name] for name, ce in ces.items()}


# --- the pilots' life at a simulated CE ----------------------------------------------------------


def _pilot_resource(pilot: Pilot, ces: dict, idents: dict) -> matching.Resource | None:
    """What the pilot presents at its CE; `idents` keeps the (owner, group) ids of each
    (DN, group name) looked up in this cycle."""
    ce = ces.get(pilot.ce)
    if ce is None:
        return None
    key = (pilot.owner_dn, pilot.owner_group)
    if key not in idents:
        idents[key] = (
            User.objects.filter(dn=pilot.owner_dn).values_list("pk", flat=True).first(),
            GridGroup.objects.filter(name=pilot.owner_group).values_list("pk", flat=True).first(),
        )
    owner, group = idents[key]
    return matching.ce_resource(ce, pilot.private, owner, group)


def _start_next_job(pilot: Pilot, ces, sim, rng, now, idents: dict) -> bool:
    """The pilot asks the matcher; a job it gets starts running on the simulated CE."""
    resource = _pilot_resource(pilot, ces, idents)
    found = None
    if resource is not None:
        found = dispatcher.match_job(resource, pilot.reference, rng=rng, pilot_id=pilot.pk)
    if found is None:
        return False
    job = found.job
    report_job(job.id, JobStatus.RUNNING, f"running on {pilot.ce}")
    pilot_output.record(
        pilot.pk, [f"matched job {job.id}: payload started on {pilot.hostname}"], job.id, now
    )
    runtime = max(1.0, job.cpu_time * float(sim.get("CPUScale", 0.01)))
    Pilot.objects.filter(pk=pilot.pk).update(next_event=now + timedelta(seconds=runtime))
    return True


def _boot(pilot: Pilot, rng: random.Random, now) -> None:
    """The pilot starts on a worker node behind its CE: the node is recorded, and its log."""
    host, node = failures.worker_node(rng, pilot.ce)
    pilot_output.set_node(pilot.pk, host, node)
    pilot.hostname, pilot.node = host, node
    lines = [
        f"pilot {pilot.reference} started on {host} ({node['cores']} cores, {node['os']})",
        f"queue {pilot.site} / {pilot.ce}: asking the matcher for a job",
    ]
    pilot_output.record(pilot.pk, lines, at=now)


def _end_job(pilot: Pilot, job: Job, failed: bool, rng: random.Random) -> None:
    """The job's payload ends on the pilot's worker node: finished, or failed with an error
    drawn from the simulated failures, its log lines as the payload's last output."""
    # No CPU or wall time: the accounting counts no simulated use as reported.
    memory_mb = rng.randrange(800, 4000)
    results: dict = {"hostname": pilot.hostname, "peak_memory_kb": memory_mb * 1024}
    if not failed:
        pilot_output.record(pilot.pk, [f"job {job.pk}: payload finished, exit code 0"], job.pk)
        report_job(job.pk, JobStatus.FINISHED, "payload done", results={**results, "exit_code": 0})
        return
    failure = failures.draw(rng)
    lines = failures.log_lines(failure, job.pk, pilot.hostname, pilot.site, memory_mb)
    heartbeat(job.pk, output_tail="\n".join(lines) + "\n")
    described = errors.describe(failure.code)
    pilot_output.record(
        pilot.pk,
        [
            *(("WARNING", line) for line in lines[:-1]),
            ("ERROR", f"job {job.pk}: failed, error {failure.code} ({described.diag})"),
        ],
        job.pk,
    )
    if failure.exit_code is not None:
        results["exit_code"] = failure.exit_code
    report_job(
        job.pk, JobStatus.FAILED, described.diag, results={**results, "error_code": failure.code}
    )


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
        Pilot.objects.filter(grid_type=GRID_TYPE, next_event__lte=now)
        .exclude(status__in=PILOT_FINAL_STATES)
        .order_by("next_event")[:limit]
    )
    free = free_job_slots(ces)
    idents: dict = {}  # (DN, group name) -> (owner id, group id), looked up once a cycle
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
            if free.get(pilot.ce, 1) <= 0:  # the CE's batch system: no free slot, it stays queued
                Pilot.objects.filter(pk=pilot.pk).update(next_event=now + timedelta(minutes=1))
                counts["held_for_a_slot"] += 1
                continue
            free[pilot.ce] = free.get(pilot.ce, 1) - 1
            pilot = set_pilot_status(pilot.pk, PilotStatus.RUNNING, "started on a worker node", now)
            _boot(pilot, rng, now)
            if _start_next_job(pilot, ces, sim, rng, now, idents):
                counts["jobs_started"] += 1
            else:
                set_pilot_status(pilot.pk, PilotStatus.DONE, "no job for it")
                free[pilot.ce] += 1
                counts["done"] += 1
        elif pilot.status == PilotStatus.RUNNING:
            current = Job.objects.filter(pilot=pilot, status=JobStatus.RUNNING).first()
            if current is not None:
                failed = rng.random() < float(sim.get("JobFailed", 0.05))
                _end_job(pilot, current, failed, rng)
                counts["jobs_failed" if failed else "jobs_finished"] += 1
                pilot.refresh_from_db(fields=["jobs_done"])
            if pilot.jobs_done < MAX_JOBS_PER_PILOT and _start_next_job(
                pilot, ces, sim, rng, now, idents
            ):
                counts["jobs_started"] += 1
            else:
                pilot_output.record(pilot.pk, [f"no more work: ran {pilot.jobs_done} jobs"])
                set_pilot_status(pilot.pk, PilotStatus.DONE, f"ran {pilot.jobs_done} jobs")
                free[pilot.ce] = free.get(pilot.ce, 0) + 1
                counts["done"] += 1
    return dict(counts)
