"""What the retention cycle deletes, kind by kind: which rows may go, and what is exported.

Each kind names its model, the field set when a row is inserted (`born`, growing with the
primary key: it bounds the scan of a run to the old end of the table), the rows that may go
given the cutoff, the rows written to the export (with the children deleted along), and who
deletes them: the owner of the kind where it has one (jobs: the job lifecycle's
matcher.services.purge_jobs), else the cycle itself.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

import orjson
from django.db.models import Exists, Model, OuterRef, Q

from brokerage.models import BrokerageRun, TaskJob, TaskStatus
from classads.models import JobAd, JobAdNode, JobAdStatus
from core.models import CycleRun
from matcher.models import FINAL_STATES, Job, JobStatusHistory, TaskQueueJob
from pilots.models import PILOT_FINAL_STATES, DirectorDecision, Pilot, PilotStatusHistory
from retention.params import AGES
from sandboxes import services as sandbox_services
from sandboxes.models import SandboxFile
from timeouts.models import TimeoutAction

FINAL_TASK_STATES = (TaskStatus.DONE, TaskStatus.FAILED)
FINAL_JOB_AD_STATES = (JobAdStatus.COMPLETED, JobAdStatus.REMOVED)


@dataclass(frozen=True)
class Kind:
    name: str
    model: type[Model]
    born: str
    deletable: Callable[[datetime], Q]
    export: Callable[[list[int]], Iterable[dict]]
    # Deletes the locked rows with their children (None: retention.services does).
    delete: Callable[[list[int]], object] | None = None
    # The age parameter when another app owns it (None: retention.params.AGES).
    age: str | None = None

    @property
    def age_param(self) -> str:
        return self.age or AGES[self.name][0]


def _rows(model: type[Model], ids: list[int]) -> list[dict]:
    return list(model.objects.filter(pk__in=ids).order_by("pk").values())


def _with_history(model, history_model, fk: str, ids: list[int]) -> list[dict]:
    history = defaultdict(list)
    for row in (
        history_model.objects.filter(**{f"{fk}__in": ids})
        .order_by(fk, "at", "id")
        .values(fk, "at", "from_status", "to_status", "reason")
    ):
        history[row.pop(fk)].append(row)
    rows = _rows(model, ids)
    for row in rows:
        row["history"] = history.get(row["id"], [])
    return rows


# --- jobs --------------------------------------------------------------------------------------


def _jobs_deletable(cutoff: datetime) -> Q:
    live_task = TaskJob.objects.filter(job=OuterRef("pk")).exclude(
        task__status__in=FINAL_TASK_STATES
    )
    live_ad = JobAdNode.objects.filter(job=OuterRef("pk")).exclude(
        job_ad__status__in=FINAL_JOB_AD_STATES
    )
    # A final job still in a TaskQueue is an inconsistency the cleanup cycle repairs first.
    queued = TaskQueueJob.objects.filter(job=OuterRef("pk"))
    return (
        Q(status__in=FINAL_STATES, status_changed__lt=cutoff)
        & ~Exists(live_task)
        & ~Exists(live_ad)
        & ~Exists(queued)
    )


def _jobs_export(ids: list[int]) -> list[dict]:
    rows = _with_history(Job, JobStatusHistory, "job_id", ids)
    tasks = dict(TaskJob.objects.filter(job_id__in=ids).values_list("job_id", "task_id"))
    ads = dict(JobAdNode.objects.filter(job_id__in=ids).values_list("job_id", "job_ad_id"))
    for row in rows:
        row["task_id"] = tasks.get(row["id"])
        row["job_ad_id"] = ads.get(row["id"])
    return rows


# --- the others ----------------------------------------------------------------------------


def _pilots_deletable(cutoff: datetime) -> Q:
    return Q(status__in=PILOT_FINAL_STATES, status_changed__lt=cutoff)


def _cycle_runs_deletable(cutoff: datetime) -> Q:
    # The last success of each cycle stays: the health check and the dashboard read it.
    newer_success = CycleRun.objects.filter(
        kind=OuterRef("kind"), status=CycleRun.Status.SUCCESS, started__gt=OuterRef("started")
    )
    return Q(started__lt=cutoff) & ~Q(status=CycleRun.Status.RUNNING) & Exists(newer_success)


def _brokerage_runs_deletable(cutoff: datetime) -> Q:
    # The latest decision of each kind for a task stays: its page explains why it waits.
    newer = BrokerageRun.objects.filter(
        task=OuterRef("task"), kind=OuterRef("kind"), pk__gt=OuterRef("pk")
    )
    return Q(at__lt=cutoff) & Exists(newer)


def _brokerage_runs_export(ids: list[int]) -> list[dict]:
    rows = _rows(BrokerageRun, ids)
    for row in rows:
        trace = bytes(row.pop("trace") or b"")
        row["trace"] = orjson.loads(zlib.decompress(trace)) if trace else []
    return rows


def _job_ads_deletable(cutoff: datetime) -> Q:
    # Its last change: the match, or the submission of an ad removed before any match.
    changed_before = Q(matched__lt=cutoff) | Q(matched__isnull=True, created__lt=cutoff)
    return Q(status__in=FINAL_JOB_AD_STATES) & changed_before


def _job_ads_export(ids: list[int]) -> list[dict]:
    nodes = defaultdict(list)
    for ad, name, job in JobAdNode.objects.filter(job_ad_id__in=ids).values_list(
        "job_ad_id", "name", "job_id"
    ):
        nodes[ad].append({"name": name, "job_id": job})
    rows = _rows(JobAd, ids)
    for row in rows:
        row["node_jobs"] = nodes.get(row["id"], [])
    return rows


# In this order: jobs before the job ads whose nodes they are (an ad's node row goes with it).
KINDS = [
    # A job's sandbox files go with it (sandboxes.services.purge_jobs: matcher's purge, then
    # the stored files).
    Kind("jobs", Job, "created", _jobs_deletable, _jobs_export, sandbox_services.purge_jobs),
    # Sandbox files older than SandboxRetentionDays, their jobs kept.
    Kind(
        "sandbox_files",
        SandboxFile,
        "created",
        lambda cutoff: Q(created__lt=cutoff),
        lambda ids: _rows(SandboxFile, ids),
        sandbox_services.delete_files,
        age="SandboxRetentionDays",
    ),
    Kind(
        "pilots",
        Pilot,
        "submitted",
        _pilots_deletable,
        lambda ids: _with_history(Pilot, PilotStatusHistory, "pilot_id", ids),
    ),
    Kind("job_ads", JobAd, "created", _job_ads_deletable, _job_ads_export),
    Kind("brokerage_runs", BrokerageRun, "at", _brokerage_runs_deletable, _brokerage_runs_export),
    Kind(
        "director_decisions",
        DirectorDecision,
        "at",
        lambda cutoff: Q(at__lt=cutoff),
        lambda ids: _rows(DirectorDecision, ids),
    ),
    Kind(
        "timeout_actions",
        TimeoutAction,
        "at",
        lambda cutoff: Q(at__lt=cutoff),
        lambda ids: _rows(TimeoutAction, ids),
    ),
    Kind(
        "cycle_runs",
        CycleRun,
        "started",
        _cycle_runs_deletable,
        lambda ids: _rows(CycleRun, ids),
    ),
]
