"""Running background cycles: one at a time per kind, each recorded as a CycleRun.

The lock is the row itself: a partial unique constraint allows one `running` CycleRun per kind,
so claiming a cycle is inserting that row. A session advisory lock is taken too; it dies with
the process, so a run left `running` by a crashed worker is recognised at once (we hold the
advisory lock, hence nobody else is running) and marked abandoned. Without the lock, a
`running` row older than CycleStaleSeconds is taken to be dead.
"""

from __future__ import annotations

import logging
import os
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from core import clock, db, gdpconfig, registry
from core.models import CycleRun

log = logging.getLogger(__name__)

CYCLES = registry.CYCLES  # the store (core/registry.py)


def cycle(kind: str):
    """Register a service function as the body of the cycle `kind`."""

    def wrap(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        CYCLES[kind] = fn
        return fn

    return wrap


def current_run_id(kind: str) -> int | None:
    """The id of the run of `kind` under way (a cycle body records it on what it writes)."""
    return (
        CycleRun.objects.filter(kind=kind, status=CycleRun.Status.RUNNING)
        .values_list("pk", flat=True)
        .first()
    )


def this_host() -> str:
    """What a run records as its runner: the host's NODE_NAME and this process."""
    return f"{settings.NODE_NAME}/{os.getpid()}"[:128]


def _advisory_key(kind: str) -> int:
    """The session advisory lock of the cycle `kind` (another process may hold it: a test)."""
    return db.advisory_key(f"gridwms-cycle:{kind}")


def _try_advisory_lock(kind: str) -> bool:
    return db.try_advisory_lock(_advisory_key(kind))


def _advisory_unlock(kind: str) -> None:
    db.advisory_unlock(_advisory_key(kind))


def _claim(kind: str, holds_advisory_lock: bool) -> CycleRun | None:
    now = clock.now()
    stale = CycleRun.objects.filter(kind=kind, status=CycleRun.Status.RUNNING)
    if not holds_advisory_lock:
        stale = stale.filter(
            # In the simulated grid, a real-time limit: its clock runs `speed` times faster.
            started__lt=now
            - timedelta(seconds=gdpconfig.get("CycleStaleSeconds") * max(clock.speed(), 1.0))
        )
    stale.update(
        status=CycleRun.Status.ABANDONED, finished=now, error="the process running it died"
    )
    try:
        with transaction.atomic():
            return CycleRun.objects.create(kind=kind, started=now, host=this_host())
    except IntegrityError:
        return None


def run_cycle(kind: str, **kwargs) -> CycleRun:
    """Run the registered cycle `kind` once, unless another run of it is under way; `kwargs`
    go to its body (a seeded RNG, say)."""
    body = CYCLES[kind]
    if not _try_advisory_lock(kind):
        return CycleRun.objects.create(
            kind=kind,
            started=clock.now(),
            finished=clock.now(),
            status=CycleRun.Status.SKIPPED,
            error="another run of this cycle is under way",
            host=this_host(),
        )
    try:
        run = _claim(kind, holds_advisory_lock=True)
        if run is None:
            return CycleRun.objects.create(
                kind=kind,
                started=clock.now(),
                finished=clock.now(),
                status=CycleRun.Status.SKIPPED,
                error="another run of this cycle is under way",
                host=this_host(),
            )
        started = time.monotonic()
        try:
            counts = body(**kwargs) or {}
        except Exception as exc:
            log.exception("cycle %s failed", kind)
            run.status = CycleRun.Status.FAILED
            run.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"
            run.counts = {}
        else:
            run.status = CycleRun.Status.SUCCESS
            run.counts = counts
        run.finished = clock.now()
        run.real_seconds = time.monotonic() - started
        run.save(update_fields=["status", "error", "counts", "finished", "real_seconds"])
        return run
    finally:
        _advisory_unlock(kind)
