"""A job's states, their groupings and the transitions between them, as data: the one place
the rest of the code reads them from. Pure: plain strings, no Django (models.JobStatus spells
the same states as model choices; a test holds the two equal).

The groupings (every query, page and rule that means "the jobs that ..." names one of these):

- WAITING_TO_BROKER: waiting for brokerage to place it (defined, assigned, pending,
  throttled); UNBROKERED_STATES the two of them brokerage has not decided on yet;
- WAITING_STATES: not yet matched to a pilot (those, and activated: in a TaskQueue);
- CLAIMED_STATES: a pilot holds it (sent ... transferring); STARTED_STATES those its pilot has
  started; RUNNING_STATES those holding a slot for the shares (sent, starting, running);
  AT_WORK_STATES those whose pilot must send heartbeats (running, starting);
- FINAL_STATES: nothing more happens to it; LIVE_STATES: every other state;
- a few groupings with one reader each, named for what that reader counts.

Reschedule sends a job back to wait in its TaskQueue. From `failed` its owner may (the work
did not succeed). From a state in which a pilot holds the job (sent ... transferring) only
staff may, and the pilot's claim is revoked: its later reports are refused, so that two
pilots never run the job for one record. Never from `finished` (it would run again work that
succeeded), `cancelled` or `closed` (final: submit again), nor from a state in which the job
still waits (for brokerage, or in its TaskQueue).
"""

from __future__ import annotations

from dataclasses import dataclass

# --- the states (models.JobStatus, in its order) -----------------------------------------------

PENDING = "pending"
DEFINED = "defined"
ASSIGNED = "assigned"
THROTTLED = "throttled"
ACTIVATED = "activated"
SENT = "sent"
STARTING = "starting"
RUNNING = "running"
HOLDING = "holding"
TRANSFERRING = "transferring"
FINISHED = "finished"
FAILED = "failed"
CANCELLED = "cancelled"
CLOSED = "closed"
STATES = (
    PENDING,
    DEFINED,
    ASSIGNED,
    THROTTLED,
    ACTIVATED,
    SENT,
    STARTING,
    RUNNING,
    HOLDING,
    TRANSFERRING,
    FINISHED,
    FAILED,
    CANCELLED,
    CLOSED,
)
NEW = ""  # a history entry's from_status when the job was created

# --- groupings ---------------------------------------------------------------------------------
# Tuples where a reader's order shows (rules on a page, a rank); the order never changes a set.

FINAL_STATES = frozenset({FINISHED, FAILED, CANCELLED, CLOSED})
LIVE_STATES = frozenset(STATES) - FINAL_STATES
# Waiting for brokerage to place it; the first two, brokerage has not decided on yet.
WAITING_TO_BROKER = (DEFINED, ASSIGNED, PENDING, THROTTLED)
UNBROKERED_STATES = (DEFINED, ASSIGNED)
# Not yet matched to a pilot: waiting for brokerage, or in a TaskQueue.
WAITING_STATES = (PENDING, DEFINED, ASSIGNED, THROTTLED, ACTIVATED)
# Placed or about to be, not yet matched (the brokerage's per-queue counts of waiting jobs).
PRE_MATCH_STATES = (DEFINED, ASSIGNED, ACTIVATED)
# PanDA's "queued" at a queue (nQueue): waiting there, or its pilot starting it. Fast
# rebrokerage ranks the waiting ones in this order.
QUEUED_STATES = (DEFINED, ASSIGNED, ACTIVATED, STARTING)
# The analysis brokerage's queued jobs of a user: PanDA's nQueue and the jobs sent to pilots.
QUEUED_OR_SENT_STATES = (DEFINED, ASSIGNED, ACTIVATED, SENT, STARTING)
# The activated timeout's states: waiting in a TaskQueue, or a pilot is starting it.
ACTIVATED_OR_STARTING = (ACTIVATED, STARTING)
# A pilot holds it: only that pilot reports on it.
CLAIMED = (SENT, STARTING, RUNNING, HOLDING, TRANSFERRING)
CLAIMED_STATES = frozenset(CLAIMED)
# Its pilot started it (the latest of these changes is a queue's latest start).
STARTED_STATES = frozenset(CLAIMED_STATES - {SENT})
# Holding a slot: what the shares and the director count as running.
RUNNING_STATES = (SENT, STARTING, RUNNING)
# A pilot is at work on it: it sends heartbeats (the heartbeat timeout); the latest change of
# these is a site's latest start for the timeout rules.
AT_WORK_STATES = (RUNNING, STARTING)
# The ends a pilot reports: one more job done for that pilot.
PILOT_END_STATES = (FINISHED, FAILED)
# Ended other than by a user's kill: a task's recent outcomes per queue.
UNCANCELLED_FINAL_STATES = (FINISHED, FAILED, CLOSED)
# The simulator's backlog: no more work arrives while this many jobs wait.
SIMULATED_BACKLOG_STATES = (ACTIVATED, DEFINED, PENDING)

# --- transitions -------------------------------------------------------------------------------

# What a pilot may report on the job it holds, from each state it holds it in.
PILOT_REPORTS: dict[str, frozenset[str]] = {
    SENT: frozenset({STARTING, RUNNING, FAILED}),
    STARTING: frozenset({RUNNING, FAILED}),
    RUNNING: frozenset({HOLDING, TRANSFERRING, FINISHED, FAILED}),
    HOLDING: frozenset({TRANSFERRING, FINISHED, FAILED}),
    TRANSFERRING: frozenset({FINISHED, FAILED}),
}


@dataclass(frozen=True)
class Move:
    """Who moves a job from any of `sources` to any of `targets`."""

    by: str
    sources: frozenset[str]
    targets: frozenset[str]


def _move(by: str, sources, targets) -> Move:
    return Move(by, frozenset(sources), frozenset(targets))


# Every transition the code makes (a timeout's rebrokerage may leave a job where it was: the
# history records defined -> defined and activated -> activated).
MOVES: tuple[Move, ...] = (
    # matcher.services.submit_jobs, matcher.bulk, classads' DAG nodes: into a TaskQueue.
    _move("submission", {NEW}, {ACTIVATED}),
    # matcher.services.define_jobs: a task's jobs (and JEDI's retries), for brokerage.
    _move("task definition", {NEW}, {DEFINED}),
    # matcher.services.activate_jobs: brokerage placed it.
    _move("brokerage", WAITING_TO_BROKER, {ACTIVATED}),
    # matcher.services.set_waiting_status: brokerage holds it back (never to its own state).
    *(
        _move("brokerage holds", set(WAITING_TO_BROKER) - {to}, {to})
        for to in (PENDING, THROTTLED, DEFINED)
    ),
    # matcher.claims: a pilot claims it.
    _move("claim", {ACTIVATED}, {SENT}),
    # pilots.services.report_job.
    *(_move("pilot report", {s}, to) for s, to in PILOT_REPORTS.items()),
    # matcher.services.kill_job (lifecycle.JOB_ACTIONS["kill"]).
    _move("kill", LIVE_STATES, {CANCELLED}),
    # matcher.services.reschedule_job (JOB_ACTIONS["reschedule"]).
    _move("reschedule", {FAILED} | CLAIMED_STATES, {ACTIVATED}),
    # timeouts.actions, by the action of each rule of timeouts.rules: rebroker (a task's job
    # back to brokerage, another rescheduled, or failed at MaxRescheduling), reassign (a
    # task's job closed for a retry, another as rebroker), close, fail.
    _move(
        "timeout: rebroker",
        {PENDING, ASSIGNED, *ACTIVATED_OR_STARTING, *QUEUED_STATES},
        {DEFINED, ACTIVATED, FAILED},
    ),
    _move("timeout: reassign", {DEFINED}, {CLOSED, ACTIVATED, FAILED}),
    _move("timeout: close", {THROTTLED, RUNNING}, {CLOSED}),
    _move("timeout: fail", {SENT, *AT_WORK_STATES, HOLDING, TRANSFERRING}, {FAILED}),
)

TRANSITIONS: dict[str, frozenset[str]] = {
    source: frozenset(to for m in MOVES if source in m.sources for to in m.targets)
    for source in (NEW, *STATES)
    if any(source in m.sources for m in MOVES)
}


def allowed(from_state: str, to_state: str) -> bool:
    """Whether the code may move a job from `from_state` (NEW: created) to `to_state`."""
    return to_state in TRANSITIONS.get(from_state, frozenset())


# --- a user's actions --------------------------------------------------------------------------


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
        owner=frozenset({FAILED}),
        staff=CLAIMED_STATES,
        revokes_claim=True,
        done="rescheduled",
    ),
}

# Why an action cannot start from a state, where a plainer word than "not allowed" exists.
REFUSALS: dict[tuple[str, str], str] = {
    ("reschedule", FINISHED): "it finished: rescheduling would run again work that "
    "succeeded (submit a new job instead)",
    ("reschedule", CANCELLED): "it was cancelled, which is final (submit it again)",
    ("reschedule", CLOSED): "it is closed, which is final",
    ("reschedule", ACTIVATED): "it already waits in a TaskQueue",
    **{("reschedule", s): "it waits for brokerage to place it" for s in WAITING_TO_BROKER},
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
