"""A PanDA JobSpec as a gridwms job, both ways.

Submission: each JobSpec becomes the native submission it stands for and is checked by the native
submission's serializer (api.matcher.serializers.JobSubmitSerializer: the same bounds and
messages, its fields named back by their JobSpec names), then stored through
matcher.services.submit_jobs, all or nothing:

    jobName -> name             transformation -> executable    jobParameters -> arguments
    computingSite -> sites (a site, or a PanDA queue: its site)  maxCpuCount -> cpu_time
    workingGroup (else the token's or the user's only group) -> owner_group
    coreCount > 1 -> tags MultiProcessor and <N>Processors (the grid's convention)
    currentPriority -> current_priority (PanDA's own, which the timeout rules read)
    prodSourceLabel: one of PanDA's; a production label needs a ProductionManagement group

What gridwms has no column for (prodSourceLabel, coreCount, jobDefinitionID, jobsetID) is kept
in the job's JDL text as a ClassAd, and read back by `describe`.
"""

from __future__ import annotations

import shlex

import classad2
from django.conf import settings

from api.core import tokens
from api.matcher.serializers import MAX_CPU_TIME, JobSubmitSerializer, SubmissionContext
from api.panda_client.jobspec import PandaInputError, description, kind, moment
from brokerage.models import PandaQueue
from core import clock, gdpconfig
from matcher import services
from matcher.models import Job
from matcher.vocabularies import PANDA_STATUS

# PanDA's prodSourceLabels (pandaserver.taskbuffer.JobUtils): analysis, production, neutral.
ANALYSIS_LABELS = ("user", "panda")
TEST_LABELS = ("ptest", "rc_test", "rc_test2", "rc_alrb")
PRODUCTION_LABELS = ("managed", "prod_test")
LABELS = (*ANALYSIS_LABELS, *PRODUCTION_LABELS, "install", *TEST_LABELS)
DEFAULT_LABEL = "user"

DEFAULT_CPU_TIME = 3600  # seconds, for a maxCpuCount of 0 or none (PanDA's "not set")
MAX_CORES = 1024
PRIORITY_BOUND = 1_000_000  # currentPriority within +-; PanDA's own stay in the thousands
MAX_ID = 2**63 - 1  # jobDefinitionID and jobsetID: PanDA's NUMBER(11) ids fit

# The native submission's fields -> the JobSpec attribute a client set them with.
PANDA_NAMES = {
    "name": "jobName",
    "executable": "transformation",
    "arguments": "jobParameters",
    "cpu_time": "maxCpuCount",
    "sites": "computingSite",
    "owner_group": "workingGroup",
    "tags": "coreCount",
    "setup": "jobs",
    "non_field_errors": "jobs",
}


# --- reading a JobSpec's values --------------------------------------------------------------


def _text(job: dict, i: int, name: str) -> str | None:
    value = job.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise PandaInputError(name, f"must be a string, not {kind(value)}", i)
    if "\x00" in value:
        raise PandaInputError(name, "must not hold a NUL", i)
    return value


def _integer(job: dict, i: int, name: str, low: int, high: int) -> int | None:
    """An integer attribute (a client's JobSpec may hold it as a decimal string)."""
    value = job.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        if "\x00" in value:
            raise PandaInputError(name, "must not hold a NUL", i)
        try:
            value = int(value.strip())
        except ValueError:
            raise PandaInputError(name, f"{value[:40]!r} is not an integer", i) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise PandaInputError(name, f"must be an integer, not {kind(value)}", i)
    if not low <= value <= high:
        raise PandaInputError(name, f"must be between {low} and {high}; it is {value}", i)
    return value


def _sites(job: dict, i: int) -> list[str]:
    """computingSite: a gridwms site, or a PanDA queue standing for its site."""
    name = _text(job, i, "computingSite")
    if not name:
        return []
    queue = PandaQueue.objects.filter(name=name).select_related("site").first()
    return [queue.site.name if queue is not None else name]


def _owner_group(job: dict, i: int, context: SubmissionContext, claims: dict) -> str | None:
    """workingGroup if named; else the one group the user belongs to among the token's
    `groups` (all of the user's groups when the token names none of them). None: the
    serializer's own message (the user belongs to no group)."""
    named = _text(job, i, "workingGroup")
    if named:
        return named
    mine = sorted(context.groups)
    claimed = [g for g in claims.get("groups") or () if isinstance(g, str) and g in mine]
    candidates = claimed or mine
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        return None
    raise PandaInputError(
        "workingGroup",
        f"required: you belong to {len(candidates)} groups ({', '.join(candidates)}); "
        "name the one the job runs for",
        i,
    )


def _label(job: dict, i: int) -> str:
    label = _text(job, i, "prodSourceLabel") or DEFAULT_LABEL
    if label not in LABELS:
        raise PandaInputError(
            "prodSourceLabel", f"{label[:40]!r} is not one of PanDA's: {', '.join(LABELS)}", i
        )
    return label


def _arguments(job: dict, i: int) -> list[str]:
    text = _text(job, i, "jobParameters")
    if not text:
        return []
    try:
        return shlex.split(text)  # as a shell splits them, expanding nothing
    except ValueError as exc:
        raise PandaInputError(
            "jobParameters", f"cannot be split into arguments ({exc})", i
        ) from None


def native_spec(job: dict, i: int, context: SubmissionContext, claims: dict) -> dict:
    """The native submission (before validation) a decoded JobSpec stands for, and the PanDA
    values kept beside it ("panda")."""
    cores = _integer(job, i, "coreCount", 0, MAX_CORES) or 1
    cpu = _integer(job, i, "maxCpuCount", 0, MAX_CPU_TIME) or DEFAULT_CPU_TIME
    spec = {
        "name": _text(job, i, "jobName") or "",
        "executable": _text(job, i, "transformation") or "",
        "arguments": _arguments(job, i),
        "cpu_time": cpu,
        "sites": _sites(job, i),
        "tags": ["MultiProcessor", f"{cores}Processors"] if cores > 1 else [],
    }
    if not spec["executable"]:
        raise PandaInputError("transformation", "required: the program the job runs", i)
    group = _owner_group(job, i, context, claims)
    if group is not None:
        spec["owner_group"] = group
    panda = {
        "prodSourceLabel": _label(job, i),
        "NumberOfProcessors": cores,
        "currentPriority": _integer(job, i, "currentPriority", -PRIORITY_BOUND, PRIORITY_BOUND),
        "jobDefinitionID": _integer(job, i, "jobDefinitionID", 0, MAX_ID),
        "jobsetID": _integer(job, i, "jobsetID", 0, MAX_ID),
    }
    return {"native": spec, "panda": {k: v for k, v in panda.items() if v is not None}}


def _first_error(errors) -> tuple[str, str]:
    """(field, message) of a serializer's first error, its field named as PanDA names it."""
    field, problems = next(iter(errors.items()))
    while isinstance(problems, dict):  # a nested field's errors
        problems = next(iter(problems.values()))
    message = problems[0] if isinstance(problems, list) and problems else problems
    return PANDA_NAMES.get(field, field), str(message)


def validated(job: dict, i: int, context: SubmissionContext, claims: dict) -> dict:
    """A decoded JobSpec as a validated native spec (with "jdl" and "current_priority"), or
    PandaInputError naming the JobSpec attribute at fault."""
    mapped = native_spec(job, i, context, claims)
    serializer = JobSubmitSerializer(data=mapped["native"], context={"submission": context})
    if not serializer.is_valid():
        field, message = _first_error(serializer.errors)
        raise PandaInputError(field, message, i)
    spec = dict(serializer.validated_data)
    panda = mapped["panda"]
    label = panda["prodSourceLabel"]
    group = spec["owner_group"]
    if label in PRODUCTION_LABELS and not (group.production_management or context.user.is_staff):
        raise PandaInputError(
            "prodSourceLabel",
            f"{label!r} is a production label: the job's group needs the ProductionManagement "
            f"property, which {group.name} has not",
            i,
        )
    spec["current_priority"] = panda.get("currentPriority", 0)
    spec["jdl"] = record(panda)
    return spec


def submit(user, jobs: list[dict], claims: dict) -> list[list]:
    """Store decoded JobSpecs as gridwms jobs, all or nothing. Returns what PanDA's
    job/submit gives per job: [PandaID, jobDefinitionID, {"jobsetID": ...}] for analysis and
    test labels, [PandaID, jobDefinitionID, jobName] for the others."""
    context = SubmissionContext(user)
    specs = [validated(job, i, context, claims) for i, job in enumerate(jobs)]
    stored = services.submit_jobs(user, specs)
    out = []
    for job in stored:
        panda = recorded(job.jdl)
        label = panda.get("prodSourceLabel", DEFAULT_LABEL)
        last = (
            {"jobsetID": panda.get("jobsetID")}
            if label in ANALYSIS_LABELS + TEST_LABELS
            else job.name
        )
        out.append([job.pk, panda.get("jobDefinitionID"), last])
    return out


# --- what gridwms keeps of PanDA's values ------------------------------------------------------


def record(panda: dict) -> str:
    """PanDA's values gridwms has no column for, as a ClassAd (the job's JDL text)."""
    ad = classad2.ClassAd()
    for name, value in panda.items():
        ad[name] = value
    return str(ad)


def recorded(jdl: str) -> dict:
    """The PanDA values `record` kept; {} for a job submitted otherwise (or a JDL that says
    nothing of them)."""
    if "prodSourceLabel" not in jdl:
        return {}
    try:
        ad = classad2.ClassAd(jdl)
    except Exception:  # a DIRAC JDL the classad library refuses: nothing of PanDA's in it
        return {}
    names = ("prodSourceLabel", "NumberOfProcessors", "jobDefinitionID", "jobsetID")
    return {n: ad.get(n) for n in names if isinstance(ad.get(n), str | int)}


# --- a job read back ---------------------------------------------------------------------------


def _real(value):
    return moment(clock.real_time(value)) if value is not None else None


def describe(job: Job) -> dict:
    """A gridwms job as PanDA's job/get_description gives it (a JobSpec dict): its state by
    PanDA's name (ours: matcher.vocabularies.PANDA_STATUS), what it runs and where, what its
    pilot reported."""
    panda = recorded(job.jdl)
    failed = job.status == "failed"
    values = {
        "PandaID": job.pk,
        "jobDefinitionID": panda.get("jobDefinitionID"),
        "jobsetID": panda.get("jobsetID"),
        "jobName": job.name or None,
        "jobStatus": PANDA_STATUS[job.status],
        "jobSubStatus": job.sub_status or None,
        "prodSourceLabel": panda.get("prodSourceLabel"),
        "transformation": job.executable or None,
        "jobParameters": shlex.join(job.arguments) if job.arguments else None,
        "computingSite": job.site or (job.sites[0] if len(job.sites) == 1 else None),
        "computingElement": job.grid_ce or None,
        "currentPriority": job.current_priority,
        "maxCpuCount": job.cpu_time,
        "maxCpuUnit": "s",
        "coreCount": panda.get("NumberOfProcessors", 1),
        "prodUserName": job.owner.get_username(),
        "prodUserID": job.owner.dn or job.owner.get_username(),
        "workingGroup": job.owner_group.name,
        "VO": settings.GRID_VO,
        "attemptNr": job.reschedule_count,
        "creationTime": _real(job.created),
        "modificationTime": _real(job.status_changed),
        "stateChangeTime": _real(job.status_changed),
        "modificationHost": job.hostname or None,
        "pilotID": job.pilot_reference or None,
        "commandToPilot": "tobekilled" if job.kill_requested else None,
        "transExitCode": job.exit_code,
        "pilotErrorCode": job.error_code if failed and job.error_code is not None else 0,
        "pilotErrorDiag": job.status_reason or None if failed else None,
        "cpuConsumptionTime": int(job.cpu_seconds) if job.cpu_seconds is not None else None,
        "cpuConsumptionUnit": "s",
        "maxRSS": job.peak_memory_kb,
    }
    return description(values)


def job_ids(raw, limit: int) -> list[int]:
    """`job_ids` of job/get_description and job/kill: a list of PanDA IDs (integers or their
    decimal text, as PanDA's API takes them)."""
    if not isinstance(raw, list):
        raise PandaInputError("job_ids", f"must be a list of PanDA IDs, not {kind(raw)}")
    if len(raw) > limit:
        raise PandaInputError("job_ids", f"at most {limit} PanDA IDs; this list has {len(raw)}")
    ids = []
    for value in raw:
        if isinstance(value, str) and value.strip().isdigit() and "\x00" not in value:
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_ID:
            shown = repr(value.replace("\x00", "\\x00")[:40]) if isinstance(value, str) else value
            raise PandaInputError("job_ids", f"{shown} is not a PanDA ID (a positive integer)")
        ids.append(value)
    return ids


def describe_jobs(user, ids: list[int]) -> list[dict | None]:
    """Each requested job the user may see, described; None for one unknown or not theirs
    (as PanDA gives None for a PanDA ID it does not hold)."""
    jobs = Job.objects.visible_to(user).filter(pk__in=ids).select_related("owner", "owner_group")
    found = {job.pk: describe(job) for job in jobs}
    return [found.get(pk) for pk in ids]


def kill_jobs(user, ids: list[int]) -> list[bool]:
    """Kill each job the user may act on (Job.objects.visible_to, the lifecycle's kill rule),
    one by one in one transaction: True per job killed, False per job refused (unknown, not
    theirs, or in a state that cannot be killed)."""
    outcome = services.act_on_jobs("kill", ids, user, Job.objects.visible_to(user))
    done = set(outcome.done)
    return [pk in done for pk in ids]


def token_claims(request) -> dict:
    """The claims of the signed token the request authenticated with ({} for an API token's
    key): already verified by the authentication."""
    auth = request.auth
    if not (isinstance(auth, str) and tokens.looks_like_jwt(auth)):
        return {}
    try:
        return tokens.verify(auth)
    except tokens.InvalidToken:  # expired since it was checked, a moment ago: its user stands
        return {}


def submission_limit() -> int:
    return gdpconfig.get("MaxJobsPerSubmission")
