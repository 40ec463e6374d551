"""The timeout rules and fast rebrokerage (docs/developer-guide.md, Timeout rules and fast
rebrokerage), as pure functions.

No ORM here: plain job and queue views in, decisions out. `timeouts.services` scans the jobs
with SQL built from the same rules (a superset filter) and asks `fired` which rule, if any,
applies to each candidate.

Every rule measures an age against a limit:
- state rules count from when the job entered its state (`status_changed`, PanDA's
  stateChangeTime);
- heartbeat rules count from the pilot's last heartbeat (or, before the first one, from the
  state change).

A job may satisfy several rules (a starting job stuck for 2 days whose pilot is silent too):
the rule whose deadline came first fires; on equal deadlines, the seed's order.

Actions, as PanDA does them:
- `rebroker` (PanDA "reassign"): pending, assigned, activated/starting 2 days, the 4 h
  rule for high-priority jobs at inactive queues, fast rebrokerage. A task's job goes back to
  `defined` and through job brokerage again; a plain DIRAC job is rescheduled into its
  TaskQueue (`activated`), or `failed` once MaxRescheduling is reached.
- `reassign` (PanDA's kill code 51, "reassigned by JEDI"): defined. A task's job, which never
  left `defined`, is `closed` and its work retried as a new job (brokerage.lifecycle), up to
  TASK_MAX_ATTEMPT attempts; sending it back to `defined` would change nothing. Any other job
  is handled as by `rebroker`.
- `fail` → `failed`: sent 30 min (no reply from the pilot), lost heartbeats, holding and
  transferring timeouts.
- `close` → `closed` (PanDA's "expire", kill code 2): throttled 7 days, running 21 days.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from matcher.lifecycle import ACTIVATED_OR_STARTING, AT_WORK_STATES, CLOSED, FAILED, QUEUED_STATES

REBROKER, REASSIGN, FAIL, CLOSE = "rebroker", "reassign", "fail", "close"
# rebroker: defined (task job) or activated; reassign: closed (task job, retried as a new job)
TO_STATUS = {FAIL: FAILED, CLOSE: CLOSED}

STATE, HEARTBEAT = "state", "heartbeat"


@dataclass(frozen=True)
class Rule:
    name: str
    states: tuple[str, ...]
    since: str  # STATE (status_changed) or HEARTBEAT (heartbeat, else status_changed)
    action: str
    param: str  # the gdpconfig key of its limit
    title: str


RULES: tuple[Rule, ...] = (
    Rule("pending", ("pending",), STATE, REBROKER, "TIMEOUT_pending", "pending"),
    Rule("defined", ("defined",), STATE, REASSIGN, "TIMEOUT_defined", "defined"),
    Rule("assigned", ("assigned",), STATE, REBROKER, "TIMEOUT_assigned", "assigned"),
    Rule("throttled", ("throttled",), STATE, CLOSE, "TIMEOUT_throttled", "throttled"),
    Rule(
        "activated",
        ACTIVATED_OR_STARTING,
        STATE,
        REBROKER,
        "TIMEOUT_activated",
        "activated or starting",
    ),
    Rule(
        "inactive_queue",
        ACTIVATED_OR_STARTING,
        STATE,
        REBROKER,
        "TIMEOUT_activated_inactive_pq",
        "high priority at an inactive queue",
    ),
    Rule("sent", ("sent",), STATE, FAIL, "TIMEOUT_sent", "sent"),
    Rule("running", ("running",), STATE, CLOSE, "TIMEOUT_running", "running"),
    Rule("heartbeat", AT_WORK_STATES, HEARTBEAT, FAIL, "HEARTBEAT_TIMEOUT", "heartbeat"),
    Rule(
        "transferring_heartbeat",
        ("transferring",),
        HEARTBEAT,
        FAIL,
        "HEARTBEAT_TIMEOUT_<workflow>",
        "heartbeat of an own stage-out",
    ),
    Rule(
        "holding_high",
        ("holding",),
        STATE,
        FAIL,
        "TIMEOUT_holding_high_prio",
        "holding, high priority",
    ),
    Rule("holding", ("holding",), STATE, FAIL, "TIMEOUT_holding", "holding"),
    Rule("transferring_high", ("transferring",), STATE, FAIL, "transtimehi", "transferring, high"),
    Rule("transferring", ("transferring",), STATE, FAIL, "transtimelo", "transferring"),
)
RULE = {r.name: r for r in RULES}
FAST_REBROKERAGE = Rule(
    "fast_rebrokerage",
    QUEUED_STATES,
    STATE,
    REBROKER,
    "FAST_REBRO_THRESHOLD_*",
    "fast rebrokerage",
)
RULE[FAST_REBROKERAGE.name] = FAST_REBROKERAGE
RULE_NAMES = [r.name for r in RULES] + [FAST_REBROKERAGE.name]
FAST_REBRO_STATES = FAST_REBROKERAGE.states


@dataclass(frozen=True)
class QueueView:
    """What the rules read of a PanDA queue."""

    name: str
    status: str = "online"
    catchall: str = ""
    workflow: str = ""
    last_start: datetime | None = None
    num_slots: int | None = None

    @property
    def exempt(self) -> bool:
        """Paused queues and those with disableReassign in catchall get no timeouts at all."""
        return self.status == "paused" or "disableReassign" in (self.catchall or "")

    def inactive(self, now: datetime, idle: timedelta) -> bool:
        """test/offline, or no job start within `idle` (never counts as long ago)."""
        return (
            self.status in ("test", "offline")
            or self.last_start is None
            or now - self.last_start > idle
        )


@dataclass(frozen=True)
class JobView:
    status: str
    status_changed: datetime
    heartbeat: datetime | None = None
    current_priority: int = 0
    sub_status: str = ""


@dataclass(frozen=True)
class Limits:
    """Every limit in seconds, read from gdpconfig once per cycle."""

    seconds: dict[str, float]
    high_priority: int = 800
    inactive_idle: float = 2 * 3600.0
    heartbeat_by_workflow: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_params(
        cls, values: Mapping[str, Any], heartbeat_by_workflow: dict[str, float]
    ) -> Limits:
        """`values`: gdpconfig values by name (hours; transtime* in days); per-workflow
        heartbeat overrides in hours."""
        hour_keys = [r.param for r in RULES if r.param.startswith("TIMEOUT_")]
        seconds = {k: values[k] * 3600.0 for k in [*hour_keys, "HEARTBEAT_TIMEOUT"]}
        seconds["transtimehi"] = values["transtimehi"] * 86400.0
        seconds["transtimelo"] = values["transtimelo"] * 86400.0
        return cls(
            seconds=seconds,
            high_priority=values["TIMEOUT_HIGH_PRIORITY"],
            inactive_idle=values["INACTIVE_PQ_HOURS"] * 3600.0,
            heartbeat_by_workflow={w: h * 3600.0 for w, h in heartbeat_by_workflow.items()},
        )

    def heartbeat(self, queue: QueueView | None) -> tuple[float, str]:
        """The heartbeat limit at this queue and the key it comes from."""
        if queue is not None and queue.workflow in self.heartbeat_by_workflow:
            return (
                self.heartbeat_by_workflow[queue.workflow],
                f"HEARTBEAT_TIMEOUT_{queue.workflow}",
            )
        return self.seconds["HEARTBEAT_TIMEOUT"], "HEARTBEAT_TIMEOUT"


@dataclass(frozen=True)
class Deadline:
    rule: Rule
    at: datetime
    limit_s: float
    key: str  # the gdpconfig key that gave the limit

    @property
    def reason(self) -> str:
        return f"timeout: {self.rule.title} {human(self.limit_s)} ({self.key})"


def human(seconds: float) -> str:
    if seconds >= 86400 and seconds % 86400 == 0:
        return f"{seconds / 86400:g} d"
    if seconds >= 3600:
        return f"{seconds / 3600:g} h"
    return f"{seconds / 60:g} min"


def applicable_rules(
    job: JobView, queue: QueueView | None, now: datetime, limits: Limits
) -> list[Rule]:
    """The rules that watch this job at this queue (whatever the job's age)."""
    if queue is not None and queue.exempt:
        return []
    high = job.current_priority >= limits.high_priority
    out = []
    for rule in RULES:
        if job.status not in rule.states:
            continue
        if rule.name == "inactive_queue":
            if not (
                high
                and queue is not None
                and queue.inactive(now, timedelta(seconds=limits.inactive_idle))
            ):
                continue
        elif rule.name == "transferring_heartbeat":
            # Only where the workflow defines its own timeout and the job has its own stage-out.
            if not job.sub_status or queue is None:
                continue
            if queue.workflow not in limits.heartbeat_by_workflow:
                continue
        elif rule.name in ("holding_high", "transferring_high") and not high:
            continue
        elif rule.name in ("holding", "transferring") and high:
            continue
        out.append(rule)
    return out


def deadlines(
    job: JobView, queue: QueueView | None, now: datetime, limits: Limits
) -> list[Deadline]:
    """When each rule watching this job will fire (in the seed's order)."""
    out = []
    for rule in applicable_rules(job, queue, now, limits):
        if rule.since == HEARTBEAT:
            limit, key = limits.heartbeat(queue)
            start = job.heartbeat or job.status_changed
        else:
            limit, key = limits.seconds[rule.param], rule.param
            start = job.status_changed
        out.append(Deadline(rule, start + timedelta(seconds=limit), limit, key))
    return out


def first_deadline(
    job: JobView, queue: QueueView | None, now: datetime, limits: Limits
) -> Deadline | None:
    found = deadlines(job, queue, now, limits)
    return min(found, key=lambda d: d.at) if found else None  # min keeps the first on ties


def fired(job: JobView, queue: QueueView | None, now: datetime, limits: Limits) -> Deadline | None:
    """The rule that times this job out now, or None. A limit is exceeded strictly after it:
    a job exactly at its limit is left for the next cycle."""
    d = first_deadline(job, queue, now, limits)
    return d if d is not None and now > d.at else None


# --- fast rebrokerage ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FastRebro:
    excess: int
    values: dict[str, float | None]


def fast_rebrokerage(
    nq: int,
    nr: int,
    nq_total: int,
    ratio: float,
    frac: float,
    limit: int | None,
    num_slots: int | None = None,
) -> FastRebro:
    """How many queued jobs of one gshare to take away from one queue.

    nq: defined + assigned + activated + starting of the gshare at the queue; nr: running;
    nq_total: the gshare's nq over every queue. Triggers only when all three hold:
    nq / nr > ratio (nr = 0 counts as infinitely large), nq / nq_total > frac, nq > limit —
    and never when the gshare has no FAST_REBRO_THRESHOLD_NQUEUE_<gshare> (limit None) or the
    queue defines slots (num_slots not None: a large nq with a small nr is intended there).
    excess = ceil(min(nq − ratio·nr, nq − limit, nq − frac·nq_total)), all of it (PanDA's
    query takes one less, an off-by-one of its `rownum <` bound)."""
    values = {
        "nq": nq,
        "nr": nr,
        "nq_total": nq_total,
        "ratio": ratio,
        "frac": frac,
        "limit": limit,
    }
    if limit is None or num_slots is not None or nq <= 0:
        return FastRebro(0, values)
    if not (nq > nr * ratio and nq > nq_total * frac and nq > limit):
        return FastRebro(0, values)
    excess = math.ceil(min(nq - ratio * nr, nq - limit, nq - frac * nq_total))
    return FastRebro(max(0, min(excess, nq)), values)
