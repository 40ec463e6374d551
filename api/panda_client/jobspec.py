"""PanDA's JobSpec as its client sends and reads it: a job on the wire is the positional list of
the JobSpec's attributes (pandaclient/JobSpec.py `_attributes`, in that order) followed by its
files; a job read back is a dict of those attributes (JobSpec.load_from_dict).

ATTRIBUTES is pinned to panda-client 2.2.0: a client whose list differs sends values we would
read under the wrong names, so a job list of another length is refused (tests compare this
tuple with the installed client's)."""

from __future__ import annotations

import datetime

import orjson

# pandaclient.JobSpec.JobSpec._attributes of panda-client 2.2.0, in order.
ATTRIBUTES: tuple[str, ...] = (
    "PandaID", "jobDefinitionID", "schedulerID", "pilotID", "creationTime", "creationHost",
    "modificationTime", "modificationHost", "AtlasRelease", "transformation", "homepackage",
    "prodSeriesLabel", "prodSourceLabel", "prodUserID", "assignedPriority", "currentPriority",
    "attemptNr", "maxAttempt", "jobStatus", "jobName", "maxCpuCount", "maxCpuUnit",
    "maxDiskCount", "maxDiskUnit", "ipConnectivity", "minRamCount", "minRamUnit", "startTime",
    "endTime", "cpuConsumptionTime", "cpuConsumptionUnit", "commandToPilot", "transExitCode",
    "pilotErrorCode", "pilotErrorDiag", "exeErrorCode", "exeErrorDiag", "supErrorCode",
    "supErrorDiag", "ddmErrorCode", "ddmErrorDiag", "brokerageErrorCode", "brokerageErrorDiag",
    "jobDispatcherErrorCode", "jobDispatcherErrorDiag", "taskBufferErrorCode",
    "taskBufferErrorDiag", "computingSite", "computingElement", "jobParameters", "metadata",
    "prodDBlock", "dispatchDBlock", "destinationDBlock", "destinationSE", "nEvents", "grid",
    "cloud", "cpuConversion", "sourceSite", "destinationSite", "transferType", "taskID",
    "cmtConfig", "stateChangeTime", "prodDBUpdateTime", "lockedby", "relocationFlag",
    "jobExecutionID", "VO", "pilotTiming", "workingGroup", "processingType", "prodUserName",
    "nInputFiles", "countryGroup", "batchID", "parentID", "specialHandling", "jobsetID",
    "coreCount", "nInputDataFiles", "inputFileType", "inputFileProject", "inputFileBytes",
    "nOutputDataFiles", "outputFileBytes", "jobMetrics", "workQueue_ID", "jediTaskID",
    "jobSubStatus", "actualCoreCount", "reqID", "maxRSS", "maxVMEM", "maxSWAP", "maxPSS",
    "avgRSS", "avgVMEM", "avgSWAP", "avgPSS", "maxWalltime", "nucleus", "eventService",
    "failedAttempt", "hs06sec", "gshare", "hs06", "totRCHAR", "totWCHAR", "totRBYTES",
    "totWBYTES", "rateRCHAR", "rateWCHAR", "rateRBYTES", "rateWBYTES", "resource_type",
    "diskIO", "memory_leak", "memory_leak_x2", "container_name", "job_label", "gco2_regional",
    "gco2_global", "cpu_architecture_level", "outputFileType",
)  # fmt: skip

# The client's JobSpec writes "NULL" for an attribute never set (its __getattribute__).
NULL = "NULL"


class PandaInputError(ValueError):
    """A request PanDA's API would refuse: `field` names the request's field or the JobSpec
    attribute at fault; `job` is the job's position in the submitted list, if one."""

    def __init__(self, field: str, message: str, job: int | None = None):
        where = f"jobs[{job}].{field}" if job is not None else field
        super().__init__(f"{where}: {message}")
        self.field, self.message, self.job = field, message, job


def kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def decode_jobs(raw, limit: int) -> list[dict]:
    """The `jobs` field of job/submit (a JSON text of job lists, as pandaclient's
    MiscUtils.dump_jobs_json writes it, or the list itself) -> one dict per job of its set
    attributes ("NULL" and None left out), plus "Files" (the file states, a list).
    PandaInputError for anything else."""
    if isinstance(raw, str):
        if "\x00" in raw:
            raise PandaInputError("jobs", "must not hold a NUL")
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:  # orjson stops at 1024 levels of nesting too
            raise PandaInputError("jobs", f"is not JSON ({exc})") from None
    if not isinstance(raw, list):
        raise PandaInputError("jobs", f"must be a list of jobs, not {kind(raw)}")
    if not raw:
        raise PandaInputError("jobs", "no jobs were submitted")
    if len(raw) > limit:
        raise PandaInputError(
            "jobs",
            f"a submission carries at most {limit} jobs (gdpconfig MaxJobsPerSubmission); "
            f"this list has {len(raw)}",
        )
    return [_decode_job(i, state) for i, state in enumerate(raw)]


def _decode_job(index: int, state) -> dict:
    # The attributes, then the files; a client keeping changed attributes puts them in between.
    n = len(ATTRIBUTES)
    if not isinstance(state, list) or len(state) not in (n + 1, n + 2):
        length = f"{len(state)} values" if isinstance(state, list) else kind(state)
        raise PandaInputError(
            "jobs",
            f"each job is the list of the {n} JobSpec attributes of panda-client 2.2.0 and its "
            f"files; this one is {length}",
            index,
        )
    files = state[-1]
    if not isinstance(files, list):
        raise PandaInputError("Files", f"must be a list, not {kind(files)}", index)
    job = {
        name: value
        for name, value in zip(ATTRIBUTES, state, strict=False)
        if value is not None and value != NULL
    }
    job["Files"] = files
    return job


# --- a job read back (job/get_description) ---------------------------------------------------


def moment(value: datetime.datetime | None):
    """A time as pandaclient's Client.decode_special_cases reads it back into a datetime
    (naive UTC, as PanDA's JobSpec keeps its times)."""
    if value is None:
        return None
    utc = value.astimezone(datetime.UTC).replace(tzinfo=None)
    return {"__datetime__": utc.isoformat()}


def description(values: dict) -> dict:
    """A JobSpec dict: every attribute (None where gridwms has no value), and no files."""
    out = {name: None for name in ATTRIBUTES}
    out.update(values)
    out["Files"] = []
    return out
