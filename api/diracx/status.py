"""PATCH /api/jobs/status: DiracX's status updates as gridwms's own moves, through
matcher.services, so that a job has one lifecycle whoever asks.

- Killed: the native kill (its owner, its JobSharing group or staff, in the states the lifecycle
  allows); from the job's own pilot, the acknowledgement of a kill it carried out.
- Rescheduled: the native reschedule, under the same rules.
- Running, Completing, Done, Completed, Failed: a job's report of itself
  (vocabularies.DIRAC_REPORTED), taken from its own pilot's credential only, as the pilots'
  native reports are; MinorStatus is the move's reason, ApplicationStatus kept with it.
- Anything else (Received, Waiting, Matched, Stalled, Deleted...) is not a move a client makes.

A job's updates are read in time order and its latest Status is the one applied (DiracX keeps
the rest in its logging DB; gridwms's history holds the moves). What one may not do goes into
`failed` with the reason; the others are done, each in its own transaction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from api.diracx.errors import DiracxError, moment, text
from core import gdpconfig
from matcher import services, vocabularies
from matcher.models import Job

USER_ACTIONS = {"Killed": "kill", "Rescheduled": "reschedule"}
FIELDS = ("Status", "MinorStatus", "ApplicationStatus", "Source")
MAX_UPDATES_PER_JOB = 100
BIGINT = 2**63 - 1


@dataclass
class Update:
    """A job's updates, folded: the latest value of each field sent."""

    status: str | None = None
    minor: str | None = None
    application: str | None = None


def _job_id(key) -> int:
    if not re.fullmatch(r"\d{1,19}", key) or not 0 < int(key) <= BIGINT:
        raise DiracxError("body", f"{key[:30]!r} is not a job id")
    return int(key)


def _update(value, field: str) -> dict:
    if not isinstance(value, dict):
        raise DiracxError(field, "must be an object with Status, MinorStatus, ApplicationStatus")
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise DiracxError(f"{field}.{text(unknown[0], field, 100)}", "unknown field")
    out = {k: text(v, f"{field}.{k}", 255) for k, v in value.items() if v is not None}
    if "Status" in out and out["Status"] not in vocabularies.DIRAC_STATUSES:
        raise DiracxError(f"{field}.Status", f"{out['Status']!r} is not a DIRAC job status")
    return out


def read(body, force) -> dict[int, Update]:
    """{job id: its folded update} from the body; DiracxError naming the bad field."""
    if force not in (None, "false", "False", "0"):
        raise DiracxError("force", "gridwms moves a job only as its lifecycle allows")
    if not isinstance(body, dict) or not body:
        raise DiracxError("body", "must be an object of job ids to their timed updates")
    limit = gdpconfig.get("MaxBulkJobs")
    if len(body) > limit:
        raise DiracxError("body", f"{len(body)} jobs; at most {limit} (MaxBulkJobs)")
    updates: dict[int, Update] = {}
    for key, timed in body.items():
        job_id = _job_id(key)
        if not isinstance(timed, dict) or not timed:
            raise DiracxError(key, "must be an object of times to updates")
        if len(timed) > MAX_UPDATES_PER_JOB:
            raise DiracxError(key, f"{len(timed)} updates; at most {MAX_UPDATES_PER_JOB}")
        moments = []
        for when, value in timed.items():
            where = f"{key}.{text(when, key, 64)}"
            at = moment(when, where)
            if at.tzinfo is None:
                raise DiracxError(where, "not timezone aware")
            moments.append((at, _update(value, where)))
        folded = Update()
        for _moment, fields in sorted(moments, key=lambda m: m[0]):
            folded.status = fields.get("Status", folded.status)
            folded.minor = fields.get("MinorStatus", folded.minor)
            folded.application = fields.get("ApplicationStatus", folded.application)
        updates[job_id] = folded
    return updates


def _report(job_id: int, pilot_id: int, to: str, up: Update) -> str | None:
    """The job's pilot's report: None when taken, else why not."""
    results = {"application_status": up.application} if up.application else {}
    reason = up.minor or f"reported {up.status}"
    try:
        services.report_job(job_id, to, reason, pilot_id=pilot_id, results=results)
    except services.JobActionError as exc:
        return str(exc)
    return None


def apply(user, updates: dict[int, Update]) -> dict:
    """Apply the updates as `user`: {"success": {id: the job in DIRAC's words}, "failed": {id:
    {"detail": why}}}."""
    ids = sorted(updates)
    # The jobs whose pilot acts with this credential: they report on themselves.
    piloted = dict(
        Job.objects.filter(pk__in=ids, pilot__credential_user=user).values_list("pk", "pilot_id")
    )
    failed: dict[int, str] = {}
    done: list[int] = []
    actions: dict[str, list[int]] = {"kill": [], "reschedule": []}
    for job_id in ids:
        up = updates[job_id]
        to = vocabularies.DIRAC_REPORTED.get(up.status) if up.status else None
        if up.status is None:
            failed[job_id] = (
                "no Status: gridwms records a job's moves, not a MinorStatus or "
                "ApplicationStatus alone"
            )
        elif job_id in piloted and to is not None:
            why = _report(job_id, piloted[job_id], to, up)
            if why is None:
                done.append(job_id)
            else:
                failed[job_id] = why
        elif up.status in USER_ACTIONS:
            actions[USER_ACTIONS[up.status]].append(job_id)
        elif to is not None:
            failed[job_id] = f"only the job's own pilot reports it {up.status}"
        else:
            failed[job_id] = f"gridwms does not take Status {up.status} from a client"
    visible = Job.objects.visible_to(user)
    for action, wanted in actions.items():
        if wanted:
            out = services.act_on_jobs(action, wanted, user, visible)
            done += out.done
            failed.update(out.refused)
    rows = Job.objects.filter(pk__in=done).values(
        "pk", "status", "application_status", "status_changed"
    )
    success = {
        str(row["pk"]): {
            "Status": vocabularies.dirac_status(row["status"]),
            "MinorStatus": vocabularies.dirac_minor_status(row["status"]),
            "ApplicationStatus": row["application_status"] or "Unknown",
            "LastUpdateTime": row["status_changed"],
        }
        for row in rows
    }
    return {
        "success": success,
        "failed": {str(pk): {"detail": why} for pk, why in sorted(failed.items())},
    }
