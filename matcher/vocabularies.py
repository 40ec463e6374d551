"""The job states of DIRAC and PanDA in gridwms's words: one table, read by every client
endpoint that speaks another system's language (api/diracx, api/panda_pilot, api/panda_client).
Pure: plain strings, no Django.

gridwms's states are PanDA's (matcher.lifecycle), so a PanDA client sees them unchanged. DIRAC
names fewer states: several of ours show as one DIRAC Status, told apart by its MinorStatus.
"""

from __future__ import annotations

from matcher import lifecycle as s

# gridwms state -> (DIRAC Status, DIRAC MinorStatus): how a DiracX client sees a job.
DIRAC_STATUS: dict[str, tuple[str, str]] = {
    s.DEFINED: ("Received", "Job accepted"),
    s.ASSIGNED: ("Checking", "Assigned to a site"),
    s.PENDING: ("Checking", "Pending"),
    s.THROTTLED: ("Checking", "Throttled"),
    s.ACTIVATED: ("Waiting", "Pilot Agent Submission"),
    s.SENT: ("Matched", "Assigned"),
    s.STARTING: ("Running", "Job Initialization"),
    s.RUNNING: ("Running", "Application"),
    s.HOLDING: ("Completing", "Uploading Output Sandbox"),
    s.TRANSFERRING: ("Completing", "Uploading Output Data"),
    s.FINISHED: ("Done", "Execution Complete"),
    s.FAILED: ("Failed", "Application Finished With Errors"),
    s.CANCELLED: ("Killed", "Marked for termination"),
    s.CLOSED: ("Deleted", "Closed"),
}

# Every DIRAC Status a client may name (DIRAC's JobStatus module), with ours that show as it;
# the ones gridwms never shows (Submitting, Staging, Stalled, Rescheduled, Completed) match none.
DIRAC_STATUSES = (
    "Submitting",
    "Received",
    "Checking",
    "Staging",
    "Waiting",
    "Matched",
    "Rescheduled",
    "Running",
    "Stalled",
    "Completing",
    "Completed",
    "Done",
    "Failed",
    "Deleted",
    "Killed",
)


def dirac_status(state: str) -> str:
    return DIRAC_STATUS[state][0]


def dirac_minor_status(state: str) -> str:
    return DIRAC_STATUS[state][1]


def states_for_dirac_status(status: str) -> tuple[str, ...]:
    """Our states that a DIRAC Status stands for (empty for one gridwms never shows); an unknown
    name raises ValueError."""
    if status not in DIRAC_STATUSES:
        raise ValueError(f"{status!r} is not a DIRAC job status")
    return tuple(state for state in s.STATES if DIRAC_STATUS[state][0] == status)


# A status a DIRAC job reports of itself (PATCH /api/jobs/status) -> the state it moves the
# job to in gridwms; None: not a move a report can make (the job's record keeps its state).
DIRAC_REPORTED: dict[str, str | None] = {
    "Matched": None,
    "Running": s.RUNNING,
    "Completing": s.HOLDING,
    "Done": s.FINISHED,
    "Completed": s.FINISHED,
    "Failed": s.FAILED,
    "Stalled": None,
    "Killed": s.CANCELLED,
}

# PanDA names its states as gridwms does: the identity, kept as a table so a reader sees that
# every state has a PanDA name.
PANDA_STATUS: dict[str, str] = {state: state for state in s.STATES}
