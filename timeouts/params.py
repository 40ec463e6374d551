"""The timeout rules' gdpconfig keys (docs/developer-guide.md, Timeout rules and fast
rebrokerage; PanDA's names and defaults where it has them).

Units: every TIMEOUT_* and HEARTBEAT_TIMEOUT* value is in **hours** (PanDA's HEARTBEAT_TIMEOUT
and TIMEOUT_holding are hours too); transtimehi / transtimelo are in **days**, as in PanDA.
"""

from core.gdpconfig import FLOAT, INT, Param, register

CATEGORY = "brokerage: timeouts"


# Every number is bounded (gdpconfig.register): a time window at most ten years, so that now minus
# it stays a datetime; the unitless ones name their maximum.
MAXIMUM_OF_UNIT = {"h": 10 * 366 * 24, "days": 10 * 366}


def _reg(name, kind, default, help, **kw):
    kw.setdefault("minimum", 0)
    if "unit" in kw:
        kw.setdefault("maximum", MAXIMUM_OF_UNIT[kw["unit"]])
    return register(
        Param(name=name, kind=kind, default=default, help=help, category=CATEGORY, **kw)
    )


_reg("TIMEOUT_pending", FLOAT, 1.0, "Pending jobs are re-brokered after this long.", unit="h")
_reg(
    "TIMEOUT_defined",
    FLOAT,
    4.0,
    "A task's job still defined (not brokered) after this long is reassigned: closed, and its "
    "work retried as a new job, up to TASK_MAX_ATTEMPT attempts.",
    unit="h",
)
_reg(
    "TASK_MAX_ATTEMPT",
    INT,
    3,
    "How many jobs a task's piece of work may take (JEDI's maxAttempt): a job the defined "
    "timeout closes is retried as a new job until this many attempts were made.",
    minimum=1,
    maximum=100,
)
_reg("TIMEOUT_assigned", FLOAT, 12.0, "Assigned jobs are re-brokered after this long.", unit="h")
_reg("TIMEOUT_throttled", FLOAT, 7 * 24.0, "Throttled jobs are closed after this long.", unit="h")
_reg(
    "TIMEOUT_activated",
    FLOAT,
    48.0,
    "Activated or starting jobs are re-brokered after this long in their state.",
    unit="h",
)
_reg(
    "TIMEOUT_HIGH_PRIORITY",
    INT,
    800,
    "currentPriority from which a job is high priority (the 4 h rule, holding 3 h, transtimehi).",
    minimum=-(10**6),
    maximum=10**6,  # currentPriority, an IntegerField
)
_reg(
    "TIMEOUT_activated_inactive_pq",
    FLOAT,
    4.0,
    "High-priority activated or starting jobs at an inactive queue (status test or offline, or "
    "no job start for INACTIVE_PQ_HOURS) are re-brokered after this long.",
    unit="h",
)
_reg(
    "INACTIVE_PQ_HOURS",
    FLOAT,
    2.0,
    "A queue whose last job start is older than this is inactive (the 4 h rule).",
    unit="h",
)
_reg(
    "TIMEOUT_sent",
    FLOAT,
    0.5,
    "Sent jobs the pilot never confirmed fail after this long.",
    unit="h",
)
_reg("TIMEOUT_running", FLOAT, 21 * 24.0, "Running jobs are closed after this long.", unit="h")
_reg(
    "HEARTBEAT_TIMEOUT",
    FLOAT,
    2.0,
    "Running or starting jobs whose pilot sent no heartbeat for this long fail.",
    unit="h",
)
_reg(
    "HEARTBEAT_TIMEOUT_<workflow>",
    FLOAT,
    2.0,
    "HEARTBEAT_TIMEOUT for the queues of one CRIC workflow (e.g. HEARTBEAT_TIMEOUT_pull_ups); "
    "it also times out transferring jobs with a jobSubStatus (an own stage-out mechanism) at "
    "those queues. Unset: HEARTBEAT_TIMEOUT, and no heartbeat timeout for transferring jobs.",
    unit="h",
    family=True,
)
_reg(
    "TIMEOUT_holding_high_prio",
    FLOAT,
    3.0,
    "Holding jobs with currentPriority >= TIMEOUT_HIGH_PRIORITY fail after this long.",
    unit="h",
)
_reg(
    "TIMEOUT_holding",
    FLOAT,
    48.0,
    "Holding jobs with currentPriority < TIMEOUT_HIGH_PRIORITY fail after this long.",
    unit="h",
)
_reg(
    "transtimehi",
    FLOAT,
    2.0,
    "Transferring jobs with currentPriority >= TIMEOUT_HIGH_PRIORITY fail after this long.",
    unit="days",
)
_reg(
    "transtimelo",
    FLOAT,
    6.0,
    "Transferring jobs with currentPriority < TIMEOUT_HIGH_PRIORITY fail after this long.",
    unit="days",
)
_reg(
    "FAST_REBRO_THRESHOLD_NQNR_RATIO",
    FLOAT,
    3.0,
    "Fast rebrokerage: a queue × gshare whose queued/running ratio exceeds this (and the two "
    "other thresholds) has its excess re-brokered.",
    maximum=1e6,
)
_reg(
    "FAST_REBRO_THRESHOLD_NQUEUE_FRAC",
    FLOAT,
    0.3,
    "Fast rebrokerage: the queue's share of the gshare's queued jobs must exceed this.",
    maximum=1,
)
_reg(
    "FAST_REBRO_THRESHOLD_NQUEUE_<gshare>",
    INT,
    10,
    "Fast rebrokerage: the queue's queued jobs of the gshare must exceed this (e.g. "
    "FAST_REBRO_THRESHOLD_NQUEUE_Express). Unset: no fast rebrokerage for that gshare.",
    maximum=10**9,
    family=True,
)
