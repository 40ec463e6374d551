"""The director's submit pools and their backends (DIRAC's SubmitPools): a pool takes batches
of pilots for one TaskQueue and hands them to its backend, here the real pilot client started on
this machine (Local). How many pilots, and where they may go, is the director's business
(director.py, services.py); these only submit.

SubmitPoolBackends names each pool's kind of backend; settings.SUBMIT_POOL_BACKENDS, the one
table of them, names what opens a backend of each kind for a director cycle (the simulated CEs
of the demo's gLite and SAM pools live in the simulation app). A kind not in that table has no
backend here: its pilots are started outside this director."""

from __future__ import annotations

import random
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils.module_loading import import_string

from core import gdpconfig
from pilots import local_pilots

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
    # When a backend that moves its pilots along itself (a simulated CE) next moves this one;
    # None: the pilot reports its own states.
    moves_in: timedelta | None = None


class Backend:
    """What a submit pool hands its batches to, opened once a director cycle. A backend that
    knows its CEs' free waiting slots shares them among the cycle's batches before any is
    submitted (reserve) and, with SiteDirectorPilotCap, caps them by the waiting jobs each CE
    could run."""

    grid_type = ""
    knows_waiting_slots = False
    # Its pilots log in to this server with their credential user's API token (PilotBatch.token).
    logs_in = False

    def cap_by_runnable_jobs(self, runnable: dict[str, int]) -> None:
        pass

    def reserve(self, batches: list[PilotBatch], rng: random.Random) -> None:
        pass

    def submit(self, batch: PilotBatch, rng: random.Random) -> list[Submitted]:
        raise NotImplementedError

    def start(self) -> None:
        """After the cycle's pilots are recorded: start what submit() only prepared."""


def has_backend(kind: str) -> bool:
    return kind in settings.SUBMIT_POOL_BACKENDS


def open_backends(kinds) -> dict[str, Backend]:
    """A backend of each kind (settings.SUBMIT_POOL_BACKENDS) for one director cycle."""
    return {kind: import_string(settings.SUBMIT_POOL_BACKENDS[kind])() for kind in kinds}


class LocalBackend(Backend):
    """Starts the real pilot client (`manage.py pilot`) as a process on this machine."""

    grid_type = "Local"
    logs_in = True

    def __init__(self) -> None:
        self.pending: list[tuple[list[str], str]] = []

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
            self.pending.append((args, ref))
            out.append(Submitted(ref, site, ce))
        return out

    def start(self) -> None:
        """The processes start once the director has recorded their pilots: a pilot that
        registers finds its own record, not a stranger's."""
        pending, self.pending = self.pending, []
        for args, ref in pending:
            local_pilots.launch(args, ref, ROOT)


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


def pilot_token(user_id: int | None) -> str:
    """The API token a local pilot logs in with: its credential user's (made on first use)."""
    from rest_framework.authtoken.models import Token

    if user_id is None:
        return ""
    return Token.objects.get_or_create(user_id=user_id)[0].key
