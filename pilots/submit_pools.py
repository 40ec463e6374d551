"""The director's submit pools and their backends (DIRAC's SubmitPools): a pool takes batches
of pilots for one TaskQueue and hands them to its backend, a simulated CE (gLite, SAM) or the
real pilot client started on this machine (Local). How many pilots, and where they may go, is
the director's business (pilots.py); these only submit."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from core import gdpconfig
from matcher.models import ComputingElement
from pilots.models import PILOT_WAITING_STATES, Pilot, PilotStatus

ROOT = Path(__file__).resolve().parent.parent


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
    # The CEs of the waiting slots this batch was given (share_waiting_slots): one a pilot.
    # None: the backend picks among `ces` as long as they have free waiting slots.
    slots: list[str] | None = None
    weight: float = 1.0  # its share of scarce waiting slots (the director's lambda)


@dataclass
class Submitted:
    reference: str
    site: str
    ce: str


class SimulatedBackend:
    """A simulated CE: accepts pilots up to each CE's free waiting slots."""

    grid_type = "Simulated"

    def __init__(self, free_slots: dict[str, int], waiting: dict[str, int] | None = None):
        self.free = free_slots
        self.waiting = dict(waiting or {})  # the pilots waiting at each CE now
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

    def submit(self, batch: PilotBatch, rng: random.Random) -> list[Submitted]:
        if batch.slots is not None:
            site_of = {c: s for s, c in batch.ces}
            return [
                Submitted(f"sim://{ce}/{uuid.uuid4().hex[:12]}", site_of[ce], ce)
                for ce in batch.slots
            ]
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


def simulated_ces() -> SimulatedBackend:
    """The simulated CEs, each with its free waiting slots now: MaxWaitingPilots less the
    pilots still waiting there."""
    ce_rows = {c.name: c for c in ComputingElement.objects.all()}
    busy = Counter(
        Pilot.objects.filter(status__in=PILOT_WAITING_STATES).values_list("ce", flat=True)
    )
    return SimulatedBackend(
        {name: max(0, c.max_waiting_pilots - busy[name]) for name, c in ce_rows.items()},
        {name: busy[name] for name in ce_rows},
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


def pilot_token(user_id: int | None) -> str:
    """The API token a local pilot logs in with: its credential user's (made on first use)."""
    from rest_framework.authtoken.models import Token

    if user_id is None:
        return ""
    return Token.objects.get_or_create(user_id=user_id)[0].key
