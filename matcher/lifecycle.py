"""The states a user's action on a job may start from, as data: the API, the pages (which offer
a button only where it is allowed) and the services read this one table.

Reschedule sends a job back to wait in its TaskQueue. From `failed` its owner may (the work
did not succeed). From a state in which a pilot holds the job (sent ... transferring) only
staff may, and the pilot's claim is revoked: its later reports are refused, so that two
pilots never run the job for one record. Never from `finished` (it would run again work that
succeeded), `cancelled` or `closed` (final: submit again), nor from a state in which the job
still waits (for brokerage, or in its TaskQueue).
"""

from __future__ import annotations

from dataclasses import dataclass

from matcher.models import FINAL_STATES, JobStatus

CLAIMED_STATES = frozenset(
    {
        JobStatus.SENT,
        JobStatus.STARTING,
        JobStatus.RUNNING,
        JobStatus.HOLDING,
        JobStatus.TRANSFERRING,
    }
)
LIVE_STATES = frozenset(JobStatus.values) - FINAL_STATES


@dataclass(frozen=True)
class ActionRule:
    """`owner`: states from which the job's owner (its JobSharing group, staff) may act;
    `staff`: states from which staff alone may; `revokes_claim`: acting on a job a pilot holds
    takes it from that pilot."""

    owner: frozenset[str]
    staff: frozenset[str] = frozenset()
    revokes_claim: bool = False
    done: str = ""


JOB_ACTIONS: dict[str, ActionRule] = {
    "kill": ActionRule(owner=LIVE_STATES, done="killed"),
    "reschedule": ActionRule(
        owner=frozenset({JobStatus.FAILED}),
        staff=CLAIMED_STATES,
        revokes_claim=True,
        done="rescheduled",
    ),
}

# Why an action cannot start from a state, where a plainer word than "not allowed" exists.
REFUSALS: dict[tuple[str, str], str] = {
    ("reschedule", JobStatus.FINISHED): "it finished: rescheduling would run again work that "
    "succeeded (submit a new job instead)",
    ("reschedule", JobStatus.CANCELLED): "it was cancelled, which is final (submit it again)",
    ("reschedule", JobStatus.CLOSED): "it is closed, which is final",
    ("reschedule", JobStatus.ACTIVATED): "it already waits in a TaskQueue",
    **{
        ("reschedule", s): "it waits for brokerage to place it"
        for s in (JobStatus.DEFINED, JobStatus.ASSIGNED, JobStatus.PENDING, JobStatus.THROTTLED)
    },
    **{("kill", s): f"it is already {s}" for s in FINAL_STATES},
}


def refusal(action: str, status: str, is_staff: bool) -> str | None:
    """None when `action` may start from `status` for this user, else the reason it may not."""
    rule = JOB_ACTIONS[action]
    if status in rule.owner or (is_staff and status in rule.staff):
        return None
    if status in rule.staff:
        return f"it is {status}: only staff may {action} it (which takes it from its pilot)"
    return REFUSALS.get((action, status), f"a {status} job cannot be {rule.done}")


def offered(status: str, is_staff: bool) -> dict[str, str | None]:
    """{action: None if offered, else the reason it is not} for a job page."""
    return {action: refusal(action, status, is_staff) for action in JOB_ACTIONS}
