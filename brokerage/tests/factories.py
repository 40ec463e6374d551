"""Unsaved model instances for the pure brokerage tests: a baseline that passes every check."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from brokerage import production
from brokerage.models import Nucleus, PandaQueue, Storage, Task
from brokerage.services import world
from core import gdpconfig

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def params(kind: str = "job", **overrides) -> dict:
    names = world.JOB_PARAMS if kind == "job" else world.TASK_PARAMS
    out = {name: gdpconfig.REGISTRY[name].default for name in names}
    if kind == "task":
        out["DISK_THRESHOLD_PER_GSHARE"] = {}
    out.update(overrides)
    return out


def storage(name="DISK", **kw) -> Storage:
    fields = {
        "space_free": 1000.0,
        "space_expired": 0.0,
        "space_total": 2000.0,
        "is_tape": False,
    }
    fields.update(kw)
    return Storage(name=name, **fields)


def nucleus(name="NUC", pk=1, site_id=1, rw=0.0, storages=None, **kw) -> Nucleus:
    n = Nucleus(pk=pk, name=name, site_id=site_id, **kw)
    n.storages_list = storages if storages is not None else [storage(f"{name}_DISK")]
    n.rw = rw
    return n


def queue(name="Q1", site_id=10, counts=None, nucleus=None, **kw) -> PandaQueue:
    fields = {
        "status": "online",
        "core_count": 1,
        "maxrss": 4000,
        "corepower": 10.0,
        "cpu_efficiency": 100.0,
        "releases": ["ANY"],
        "wnconnectivity": "full#IPv4",
        "input_storage": storage("IN"),
        "output_storage": storage("OUT"),
        "last_pilot": NOW,
        "last_start": NOW,
    }
    fields.update(kw)
    q = PandaQueue(name=name, site_id=site_id, **fields)
    if nucleus is not None:
        q.nucleus = nucleus
    q.counts = Counter(counts or {})
    q.n_batch_jobs = 0
    return q


def task(**kw) -> Task:
    fields = {
        "name": "t",
        "priority": 500,
        "processing_type": "simul",
        "gshare": "MC",
        "core_count": 1,
        "ram_count": 1000,
        "cpu_time": 10.0,
        "n_jobs": 1,
        "n_events_per_job": 100,
    }
    fields.update(kw)
    return Task(**fields)


def context(nuc=None, **kw) -> production.JobContext:
    fields = {
        "nucleus": nuc if nuc is not None else nucleus(),
        "links": {},
        "nucleus_queued_files": 0,
        "locality": {},
        "totals": (0.0, 0),
        "now": NOW,
        "params": params(),
        "n_events": 100,
        "input_mb_per_job": 0.0,
    }
    fields.update(kw)
    return production.JobContext(**fields)
