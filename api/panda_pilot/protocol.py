"""PanDA's pilot protocol, as panda-server speaks it (its job dispatcher and its cache): the job
description getJob answers with (Protocol.Response.appendJob's keys), the queue descriptions the
pilot reads (schedconfig's queuedata, a CRIC-shaped queues file, a storages file), and the
form fields of its requests, each checked with an error naming it."""

from __future__ import annotations

import json
import shlex
import uuid

from brokerage.models import PandaQueue, Storage
from core import gdpconfig
from matcher.claims import MatchedJob
from pilots import panda_launch as launch

# panda-server's job dispatcher status codes (jobdispatcher/Protocol.py).
SC_SUCCESS = 0
SC_NO_JOBS = 20
SC_FAILED = 30
SC_PERMS = 70

# The states PanDA's pilot reports in updateJob (its job states are gridwms's).
PILOT_STATES = ("starting", "running", "holding", "transferring", "finished", "failed")
FINAL_STATES = ("finished", "failed")
NAMESPACE = uuid.UUID("6c1d2b8e-3f7a-4c55-9d0e-2a1b5c7e9f10")
MAX_TEXT = 255


class FormError(Exception):
    """A request field missing or malformed: `field` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message

    def body(self) -> dict:
        return {"StatusCode": SC_FAILED, "errorDialog": str(self), self.field: [self.message]}


# --- request fields ------------------------------------------------------------------------------


def text(data, field: str, *, required: bool = False, max_length: int = MAX_TEXT) -> str:
    value = data.get(field)
    if value is None or value == "":
        if required:
            raise FormError(field, "This field is required.")
        return ""
    if not isinstance(value, str):
        raise FormError(field, "Must be text.")
    if "\x00" in value:
        raise FormError(field, "Null characters are not allowed.")
    if len(value) > max_length:
        raise FormError(field, f"At most {max_length} characters.")
    return value


def integer(
    data, field: str, *, required: bool = False, low: int = -(2**31), high: int = 2**31 - 1
):
    raw = text(data, field, required=required, max_length=32)
    if raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise FormError(field, f"A whole number is required, not {raw!r}.") from None
    if not low <= value <= high:
        raise FormError(field, f"Must be between {low} and {high}.")
    return value


def number(data, field: str, *, low: float = 0.0, high: float = 1e12) -> float | None:
    raw = text(data, field, max_length=64)
    if raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise FormError(field, f"A number is required, not {raw!r}.") from None
    if not low <= value <= high:  # NaN fails both
        raise FormError(field, f"Must be between {low:g} and {high:g}.")
    return value


def choice(data, field: str, choices) -> str:
    value = text(data, field, required=True, max_length=32)
    if value not in choices:
        raise FormError(field, f"{value!r} is not one of {', '.join(choices)}.")
    return value


def declared_files(raw: str) -> dict[str, dict]:
    """The files the pilot's final update declares (its `xml` field, which PanDA's pilot fills
    with JSON: {lfn: {"guid", "fsize", "adler32", "surl"}}), checked."""
    if not raw:
        return {}
    try:
        files = json.loads(raw)
    except ValueError:
        raise FormError("xml", "Must be the pilot's JSON file description.") from None
    if not isinstance(files, dict):
        raise FormError("xml", "Must be a JSON object of files by name.")
    out = {}
    for name, entry in files.items():
        if not isinstance(entry, dict):
            raise FormError("xml", f"{name!r}: must be an object.")
        size, adler = entry.get("fsize"), entry.get("adler32", "")
        if isinstance(size, str) and size.isdigit():
            size = int(size)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise FormError("xml", f"{name!r}: fsize must be a whole number of bytes.")
        if not isinstance(adler, str) or len(adler) != 8 or not _is_hex(adler):
            raise FormError("xml", f"{name!r}: adler32 must be 8 hexadecimal digits.")
        guid = entry.get("guid", "")
        out[str(name)[:255]] = {"fsize": size, "adler32": adler.lower(), "guid": str(guid)[:64]}
    return out


def _is_hex(value: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in value)


# --- the job -------------------------------------------------------------------------------------


def log_name(job_id: int, attempt: int) -> str:
    return f"gridwms.{job_id}.{attempt}.log.tgz"


def job_command(job: MatchedJob) -> list[str]:
    """What the runner executes: the job's executable and arguments with its environment
    (`env NAME=value ...`); a job with no executable sleeps its CPU time, as the native pilot
    does."""
    if not job.executable:
        return ["sleep", str(job.cpu_time)]
    env = [f"{name}={value}" for name, value in sorted(job.environment.items())]
    return [*(["env", *env] if env else []), job.executable, *job.arguments]


def job_description(
    job: MatchedJob, attempt: int, queue: PandaQueue, label: str
) -> dict[str, object]:
    """The job as panda-server's getJob describes it (Protocol.Response.appendJob): its
    command in jobPars, run by the runner (transformation), staged as its one input file with
    its size and adler32; its log file to make; the queue's storages as endpoints."""
    log = log_name(job.id, attempt)
    disk_in = queue.input_storage.name if queue.input_storage_id else ""
    disk_out = queue.output_storage.name if queue.output_storage_id else ""
    wall = int(job.cpu_time * gdpconfig.get("PayloadWallFactor"))
    return {
        "StatusCode": SC_SUCCESS,
        "PandaID": job.id,
        "jobName": job.name or f"gridwms.{job.id}",
        "jobDefinitionID": 0,
        "jobsetID": 0,
        "taskID": 0,
        "reqID": 0,
        "prodSourceLabel": label or "user",
        "prodUserID": job.owner_dn or job.owner,
        "swRelease": "",
        "homepackage": "",
        "cmtConfig": "",
        "transformation": launch.RUNNER_NAME,
        "jobPars": shlex.join(job_command(job)),
        "attemptNr": attempt,
        "coreCount": queue.core_count or 1,
        "maxCpuCount": job.cpu_time,
        "maxWalltime": wall,
        "minRamCount": 0,
        "maxDiskCount": 0,
        "currentPriority": job.user_priority,
        "processingType": "gridwms",
        "transferType": "",
        "sourceSite": "",
        "cloud": "",
        "nucleus": "",
        "resource_type": "SCORE",
        "destinationSE": disk_out,
        "inFiles": launch.RUNNER_NAME,
        "GUID": str(uuid.uuid5(NAMESPACE, f"runner:{job.id}:{attempt}")),
        "fsize": str(len(launch.RUNNER)),
        "checksum": f"ad:{launch.RUNNER_ADLER32}",
        "scopeIn": launch.SCOPE,
        "realDatasetsIn": f"{launch.SCOPE}.runner",
        "dispatchDblock": "",
        "dispatchDBlockToken": "",
        "prodDBlocks": "",
        "prodDBlockToken": "",
        "ddmEndPointIn": disk_in,
        "outFiles": log,
        "logFile": log,
        "logGUID": str(uuid.uuid5(NAMESPACE, f"log:{job.id}:{attempt}")),
        "scopeOut": "",
        "scopeLog": launch.SCOPE,
        "realDatasets": f"{launch.SCOPE}.logs",
        "destinationDblock": "",
        "destinationDBlockToken": "",
        "dispatchDBlockTokenForOut": "",
        "fileDestinationSE": disk_out,
        "ddmEndPointOut": disk_out,
    }


# --- the queue and its storages ------------------------------------------------------------------


def queuedata(queue: PandaQueue) -> dict[str, object]:
    """The queue as panda-server's cache (schedconfig/<queue>.all.json) and CRIC describe it,
    with what the pilot needs to move files itself: the mv copytool (its inputs and outputs
    are files on the worker node, see pilots.panda_launch) and the queue's storages."""
    storages = {
        activity: [s.name]
        for activity, s in (
            ("pr", queue.input_storage),
            ("pw", queue.output_storage),
            ("pl", queue.output_storage),
        )
        if s is not None
    }
    catchall = " ".join(p for p in (launch.CATCHALL, queue.catchall) if p)
    return {
        "name": queue.name,
        "nickname": queue.name,
        "panda_resource": queue.name,
        "atlas_site": queue.site.name,
        "site": queue.site.name,
        "state": "INACTIVE" if queue.status == PandaQueue.Status.OFFLINE else "ACTIVE",
        "status": queue.status,
        "type": queue.queue_type,
        "corecount": queue.core_count or 1,
        "maxtime": queue.maxtime,
        "maxwdir": queue.maxwdir,
        "maxrss": queue.maxrss * (queue.core_count or 1),
        "pledgedcpu": queue.pledgedcpu,
        "timefloor": 0,  # one job a pilot
        "copytools": {"mv": {"setup": ""}},
        "acopytools": {"pr": ["mv"], "pw": ["mv"], "pl": ["mv"]},
        "astorages": storages,
        "aprotocols": {},
        "params": {},
        "catchall": catchall,
        "container_type": "",
        "container_options": "",
        "environ": "",
        "appdir": "",
        "platform": "",
        "is_cvmfs": False,
        "direct_access_lan": False,  # the mv copytool copies: no remote reads
        "direct_access_wan": False,
        "allow_lan": True,
        "allow_wan": False,
        "use_pcache": False,
        "maxinputsize": 0,
    }


def storage_description(storage: Storage) -> dict[str, object]:
    """A storage as CRIC's ddmendpoints.json describes one."""
    return {
        "name": storage.name,
        "id": storage.pk,
        "site": storage.site.name,
        "state": "INACTIVE" if storage.blacklisted else "ACTIVE",
        "type": "TAPE" if storage.is_tape else "DATADISK",
        "token": "",
        "is_deterministic": True,
        "arprotocols": {},
        "rprotocols": {},
        "resource": {},
    }
