"""What PanDA's pilot asks of the job dispatcher, answered through gridwms's own services: the
match (getJob claims one job through the same path as /api/v1/match/, bound to the caller's
pilot record), the reports (updateJob moves the job along the pilot reports' rules, or takes a
heartbeat; a job killed while the pilot holds it is answered `tobekilled`), the status.

The pilot acts only on its own jobs: those its credential's pilot claimed
(api.pilots.access.credential_job's rule)."""

from __future__ import annotations

import time
from types import SimpleNamespace

from django.db import transaction
from rest_framework.exceptions import ValidationError

from api.matcher import resources as r
from api.panda_pilot import protocol as p
from api.pilots import access
from brokerage.models import PandaQueue, Storage
from core import clock, gdpconfig, metrics
from matcher.lifecycle import FINAL_STATES
from matcher.models import Job, JobStatus
from matcher.vocabularies import PANDA_STATUS
from pilots import panda_pilots
from pilots import registry as pilot_registry
from pilots import services as service
from sandboxes import services as sandboxes

KILL_COMMAND = "tobekilled"
# The resource description's fields as getJob's form names them.
FORM_NAMES = {"owner_group": "workingGroup", "pilot_reference": "worker_id"}


class Conflict(Exception):
    """The report does not fit the job's state (409)."""


# --- the queue's files ---------------------------------------------------------------------------


def queue_named(name: str, field: str = "queue") -> PandaQueue:
    queue = (
        PandaQueue.objects.select_related(
            "site", "computing_element__site", "input_storage", "output_storage"
        )
        .filter(name=name)
        .first()
    )
    if queue is None:
        raise p.FormError(field, f"Unknown PanDA queue {name!r}.")
    return queue


def storages() -> dict[str, dict]:
    return {s.name: p.storage_description(s) for s in Storage.objects.select_related("site")}


# --- getJob --------------------------------------------------------------------------------------


def _resource_fields(queue: PandaQueue, data) -> dict:
    """The resource description of a pilot at this queue: its CE's site, name, CPU time,
    platforms and tags, plus PayloadTags (a PanDA pilot runs real work only: as the local
    worker node's own pilots, it offers them, so the matcher requires them)."""
    ce = queue.computing_element
    tags = set(gdpconfig.get("PayloadTags"))
    fields: dict = {"site": queue.site.name}
    if ce is not None:
        fields["grid_ce"] = ce.name
        fields["platform"] = list(ce.platforms or [])
        tags |= set(ce.tags or [])
        cpu = ce.cpu_time_limit
    else:
        cpu = 0
    fields["cpu_time"] = cpu or queue.maxtime or max(gdpconfig.get("CPUSegments"))
    fields["tag"] = sorted(tags)
    group = p.text(data, "workingGroup", max_length=64)
    if group:
        fields["owner_group"] = group
    reference = p.text(data, "worker_id")
    if reference:
        fields["pilot_reference"] = reference
    return fields


def get_job(user, data) -> dict:
    """One job claimed for the caller's pilot (the worker id it sends, HARVESTER_WORKER_ID, is
    its reference; none: a pilot record is made for the claim), described as getJob's answer;
    {"StatusCode": 20} when no waiting job fits the queue."""
    name = p.text(data, "computingElement") or p.text(data, "siteName", required=True)
    queue = queue_named(name, "computingElement" if data.get("computingElement") else "siteName")
    label = p.text(data, "prodSourceLabel", max_length=32)
    body = r.ResourceDescriptionSerializer(
        data=_resource_fields(queue, data), context={"claim": True}
    )
    try:
        body.is_valid(raise_exception=True)
        resource = body.resource(user)
    except ValidationError as exc:  # named as the pilot's fields
        detail = exc.detail if isinstance(exc.detail, dict) else {"detail": exc.detail}
        raise ValidationError({FORM_NAMES.get(k, k): v for k, v in detail.items()}) from None
    claimant = pilot_registry.resolve_pilot(
        user, body.validated_data.get("pilot_reference", ""), resource
    )
    started = time.perf_counter()
    found = pilot_registry.claim(resource, claimant)
    metrics.observe_match(time.perf_counter() - started, claimed=found is not None)
    PandaQueue.objects.filter(pk=queue.pk).update(last_pilot=clock.now())
    if found is None:
        return {"StatusCode": p.SC_NO_JOBS}
    attempt = Job.objects.filter(pk=found.job.id).values_list("reschedule_count", flat=True)[0]
    return p.job_description(found.job, attempt, queue, label)


# --- updateJob -----------------------------------------------------------------------------------


def _results(data, state: str) -> tuple[dict, str]:
    """(the payload's results as the native reports carry them, the reason) from the pilot's
    fields: transExitCode, pilotErrorCode and its diagnostics, CPU time, start and end."""
    results: dict = {}
    exit_code = p.integer(data, "transExitCode")
    if exit_code is not None:
        results["exit_code"] = exit_code
    error = p.integer(data, "pilotErrorCode", low=0, high=99999)
    diag = p.text(data, "pilotErrorDiag", max_length=4096)[: p.MAX_TEXT]
    exe_diag = p.text(data, "exeErrorDiag", max_length=4096)[: p.MAX_TEXT]
    if state == "failed" and error:
        results["error_code"] = error
    if exe_diag or diag:
        results["application_status"] = exe_diag or diag
    cpu = p.number(data, "cpuConsumptionTime")
    if cpu is not None:
        results["cpu_seconds"] = cpu
    start, end = p.number(data, "startTime", high=1e11), p.number(data, "endTime", high=1e11)
    if start is not None and end is not None and end >= start:
        results["wall_seconds"] = end - start
    node = p.text(data, "node")
    if node:
        results["hostname"] = node
    reason = ""
    if state == "failed":
        reason = f"PanDA pilot error {error}: {diag}" if error else diag or exe_diag
    return results, reason[: p.MAX_TEXT]


def own_job(user, job_id: int) -> Job:
    """The job, if the caller's credential is the one its pilot acts with: the native pilots'
    rule (api.pilots.access.credential_job: 404 for no job, 403 for another's)."""
    access.credential_job(SimpleNamespace(user=user), job_id)
    return Job.objects.only("pilot", "status", "kill_requested").get(pk=job_id)


def update_job(user, data) -> dict:
    """The pilot's report on its job. A final one (finished, failed) ends it, or acknowledges
    a kill; its declared log file is recorded for the launcher's check. Any other moves it on
    (starting, running, ...) or, in the state it is in, is a heartbeat; a job killed while the
    pilot held it is answered `tobekilled`."""
    job_id = p.integer(data, "jobId", required=True, low=1, high=2**63 - 1)
    state = PANDA_STATUS[p.choice(data, "state", p.PILOT_STATES)]  # PanDA's states are ours
    files = p.declared_files(p.text(data, "xml", max_length=100_000))
    results, reason = _results(data, state)
    job = own_job(user, job_id)
    try:
        if state in p.FINAL_STATES:
            with transaction.atomic():
                to = JobStatus.CANCELLED if job.status == JobStatus.CANCELLED else state
                ended = service.report_job(job.pk, to, reason, job.pilot_id, results)
                if ended.status in FINAL_STATES:
                    sandboxes.complete_outputs(job.pk)
                for name, entry in files.items():
                    panda_pilots.record_log_report(job.pk, job.pilot_id, name, entry)
            return {"StatusCode": p.SC_SUCCESS, "command": "NULL"}
        commands = _move_or_beat(job, state, results)
    except service.PilotError as exc:
        raise Conflict(str(exc)) from None
    return {"StatusCode": p.SC_SUCCESS, "command": KILL_COMMAND if commands else "NULL"}


def _move_or_beat(job: Job, state: str, results: dict) -> list[str]:
    """A report of the state the job is in is a heartbeat; another moves it. A move refused
    because the job was killed meanwhile is a heartbeat too, which carries the kill."""
    if job.status != state:
        try:
            service.report_job(job.pk, state, "", job.pilot_id, results)
            return []
        except service.PilotError:
            pass  # killed meanwhile? the heartbeat says (or refuses, with its reason)
    return service.heartbeat(job.pk, job.pilot_id)


# --- getStatus -----------------------------------------------------------------------------------


def get_status(user, data) -> dict:
    """The state and attempt of the caller's pilots' jobs (`ids`, comma-separated): PanDA's
    `notfound` for any other."""
    raw = p.text(data, "ids", required=True, max_length=2000)
    ids = []
    for part in raw.split(","):
        if not part.strip().isdigit() or len(part.strip()) > 18:
            raise p.FormError("ids", f"{part.strip()!r} is not a job id.")
        ids.append(int(part))
    known = dict(
        Job.objects.filter(pk__in=ids, pilot__credential_user=user).values_list("pk", "status")
    )
    attempts = dict(Job.objects.filter(pk__in=known).values_list("pk", "reschedule_count"))
    return {
        "StatusCode": p.SC_SUCCESS,
        "status": ",".join(known.get(i, "notfound") for i in ids),
        "attemptNr": ",".join(str(attempts.get(i, 0)) for i in ids),
    }
