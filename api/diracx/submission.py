"""POST /api/jobs/jdl: DiracX's list of JDL texts to gridwms jobs, through the native path.

Each JDL is bounded (MaxJDLBytes, MaxJDLAttributes), read by matcher/jdl.py, validated by the
API's own JobSubmitSerializer and stored by matcher.services.submit_jobs: the same bounds, the
same errors and the same lifecycle as `POST /api/v1/jobs/` with a JDL. As DiracX's server does,
a single JDL with `Parameters` expands to its parametric jobs (api/diracx/parametric.py), and a
list of several JDLs may not hold a parametric one. The whole list is stored or nothing.

Two things differ from the native JDL path, both DIRAC's own rules: a JDL without CPUTime gets
DIRAC's default (86400 s, its JobManifest's), and InputSandbox cannot name files, since DiracX's
sandbox store is not served here (files go with the native API's multipart submission).
"""

from __future__ import annotations

from api.diracx.errors import DiracxError, text
from api.diracx.parametric import expand, is_parametric
from api.matcher.serializers import JobSubmitSerializer, SubmissionContext
from core import gdpconfig
from core.errors import error_messages
from matcher import services, vocabularies
from matcher.jdl import JDLError, parse_jdl

DIRAC_DEFAULT_CPU_TIME = 86400  # DIRAC's JobManifest: a JDL without CPUTime gets a day
# A submission key the JDL did not name, as DIRAC names its attribute.
DIRAC_NAMES = {
    "owner_group": "OwnerGroup",
    "cpu_time": "CPUTime",
    "setup": "Setup",
    "name": "JobName",
    "user_priority": "Priority",
}


def jdl_texts(body) -> list[str]:
    """The body's JDL texts, each bounded before anything parses it."""
    if not isinstance(body, list) or not body:
        raise DiracxError("body", "must be a non-empty list of JDL texts")
    limit = gdpconfig.get("MaxJobsPerSubmission")
    if len(body) > limit:
        raise DiracxError(
            "body", f"{len(body)} JDLs; at most {limit} (the MaxJobsPerSubmission parameter)"
        )
    max_bytes = gdpconfig.get("MaxJDLBytes")
    for i, jdl in enumerate(body):
        text(jdl, f"jdl[{i}]")
        size = len(jdl.encode())
        if size > max_bytes:
            raise DiracxError(
                f"jdl[{i}]", f"the JDL is {size} bytes; at most {max_bytes} (MaxJDLBytes)"
            )
    return body


def job_jdls(texts: list[str]) -> list[str]:
    """One JDL per job: a single parametric JDL expanded, a list as it is."""
    if len(texts) == 1:
        try:
            return expand(texts[0], gdpconfig.get("MaxJobsPerSubmission"))
        except JDLError as exc:
            raise DiracxError("jdl[0]", f"{exc.field}: {exc.message}") from None
    for i, jdl in enumerate(texts):
        try:
            parametric = is_parametric(jdl)
        except JDLError as exc:
            raise DiracxError(f"jdl[{i}]", f"{exc.field}: {exc.message}") from None
        if parametric:
            raise DiracxError(
                f"jdl[{i}]", "Parameters: parametric jobs cannot be submitted in bulk"
            )
    return texts


def _spec(jdl: str, where: str, context: SubmissionContext) -> dict:
    try:
        payload, names = parse_jdl(jdl, gdpconfig.get("MaxJDLAttributes"))
    except JDLError as exc:
        raise DiracxError(where, f"{exc.field}: {exc.message}") from None
    wanted = payload.pop("input_sandbox", [])
    if wanted:
        attr = names["input_sandbox"]
        raise DiracxError(
            where,
            f"{attr}: names files not uploaded ({wanted!r}): DiracX's sandbox store is not "
            "served here; submit files with the job through /api/v1/jobs/ (multipart)",
        )
    payload.setdefault("cpu_time", DIRAC_DEFAULT_CPU_TIME)
    serializer = JobSubmitSerializer(data=payload, context={"submission": context})
    if not serializer.is_valid():
        problems = []
        for path, message in error_messages(serializer.errors):
            key = path.split(".")[0].split("[")[0]
            attr = names.get(key) or DIRAC_NAMES.get(key, path)
            problems.append(f"{attr}: {message}" if path else message)
        raise DiracxError(where, "; ".join(problems))
    return dict(serializer.validated_data, jdl=jdl)


def submit(user, body) -> list:
    """Store the body's jobs for `user`, all or nothing: the new jobs, in order. DiracxError
    naming the JDL (`jdl[i]`) and its attribute for anything refused; nothing is stored then."""
    jdls = job_jdls(jdl_texts(body))
    context = SubmissionContext(user)
    where = (lambda i: "jdl[0]") if len(body) == 1 else (lambda i: f"jdl[{i}]")
    specs = [_spec(jdl, where(i), context) for i, jdl in enumerate(jdls)]
    return services.submit_jobs(user, specs)


def inserted(jobs) -> list[dict]:
    """DiracX's InsertedJob of each new job: its status in DIRAC's words."""
    return [
        {
            "JobID": job.pk,
            "Status": vocabularies.dirac_status(job.status),
            "MinorStatus": vocabularies.dirac_minor_status(job.status),
            "TimeStamp": job.created,
        }
        for job in jobs
    ]
