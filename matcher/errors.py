"""Why a job failed, as an operator reads it: an error code and its category, PanDA's way.

The codes are PanDA pilot error codes (pilot/common/errorcodes.py: pilotErrorCode, 1000-1399)
plus the server's own for a job whose pilot went silent (jobDispatcherErrorCode 100, "lost
heartbeat"). Each belongs to one category, the column an operator's site x error view counts
by. `classify` gives a failed job its code from what its pilot reported (a code of its own,
else its exit code and signal); `describe` names a code. Pure: plain values in and out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STAGE_IN = "stage-in"
STAGE_OUT = "stage-out"
SETUP = "setup"
PAYLOAD = "payload"
MEMORY = "memory"
WALL_TIME = "wall time"
SIGNAL = "signal"
LOST_HEARTBEAT = "lost heartbeat"
TIMEOUT = "timeout"
PILOT = "pilot"
OTHER = "other"

# In the order the error summary shows them.
CATEGORIES = (
    STAGE_IN,
    SETUP,
    PAYLOAD,
    MEMORY,
    WALL_TIME,
    SIGNAL,
    STAGE_OUT,
    LOST_HEARTBEAT,
    TIMEOUT,
    PILOT,
    OTHER,
)


@dataclass(frozen=True)
class ErrorCode:
    code: int
    name: str  # PanDA's constant
    category: str
    diag: str  # PanDA's pilotErrorDiag text, shortened


LOST_HEARTBEAT_CODE = 100
TRANSFER_TIMEOUT = 101  # panda-server taskbuffer ErrorCode.EC_Transfer
EXPIRED = 102  # EC_Expire: a state's time limit passed
PAYLOAD_FAILURE = 1305
REACHED_MAX_TIME = 1213
UNKNOWN_PAYLOAD_FAILURE = 1220

TABLE: dict[int, ErrorCode] = {
    e.code: e
    for e in (
        ErrorCode(100, "EC_Watcher", LOST_HEARTBEAT, "lost heartbeat"),
        ErrorCode(101, "EC_Transfer", STAGE_OUT, "transfer timeout"),
        ErrorCode(102, "EC_Expire", TIMEOUT, "expired: the state's time limit passed"),
        ErrorCode(1008, "GENERALERROR", PILOT, "General pilot error"),
        ErrorCode(1098, "NOLOCALSPACE", SETUP, "Not enough local space on the worker node"),
        ErrorCode(1099, "STAGEINFAILED", STAGE_IN, "Failed to transfer file in"),
        ErrorCode(1100, "REPLICANOTFOUND", STAGE_IN, "Replica not found"),
        ErrorCode(1103, "NOSUCHFILE", STAGE_IN, "No such file or directory"),
        ErrorCode(1110, "SETUPFAILURE", SETUP, "Failed during payload setup"),
        ErrorCode(1137, "STAGEOUTFAILED", STAGE_OUT, "Failed to transfer output file"),
        ErrorCode(1150, "LOOPINGJOB", WALL_TIME, "Looping job killed by the pilot"),
        ErrorCode(1151, "STAGEINTIMEOUT", STAGE_IN, "File transfer timed out during stage-in"),
        ErrorCode(1152, "STAGEOUTTIMEOUT", STAGE_OUT, "File transfer timed out during stage-out"),
        ErrorCode(1165, "MISSINGOUTPUTFILE", STAGE_OUT, "Local output file is missing"),
        ErrorCode(1186, "NOSOFTWAREDIR", SETUP, "Software directory does not exist"),
        ErrorCode(1200, "KILLSIGNAL", SIGNAL, "Job terminated by unknown kill signal"),
        ErrorCode(1201, "SIGTERM", SIGNAL, "Job killed by signal: SIGTERM"),
        ErrorCode(1202, "SIGQUIT", SIGNAL, "Job killed by signal: SIGQUIT"),
        ErrorCode(1203, "SIGSEGV", SIGNAL, "Job killed by signal: SIGSEGV"),
        ErrorCode(1204, "SIGXCPU", WALL_TIME, "Job killed by signal: SIGXCPU"),
        ErrorCode(1206, "SIGBUS", SIGNAL, "Job killed by signal: SIGBUS"),
        ErrorCode(1208, "SIGINT", SIGNAL, "Job killed by signal: SIGINT"),
        ErrorCode(1212, "PAYLOADOUTOFMEMORY", MEMORY, "Payload ran out of memory"),
        ErrorCode(1213, "REACHEDMAXTIME", WALL_TIME, "Reached maximum batch queue limit"),
        ErrorCode(1220, "UNKNOWNPAYLOADFAILURE", PAYLOAD, "Job failed due to unknown reason"),
        ErrorCode(1235, "PAYLOADEXCEEDMAXMEM", MEMORY, "Payload exceeded maximum allowed memory"),
        ErrorCode(1305, "PAYLOADEXECUTIONFAILURE", PAYLOAD, "Execution of payload failed"),
    )
}

SIGNAL_CODES = {
    "SIGTERM": 1201,
    "SIGQUIT": 1202,
    "SIGSEGV": 1203,
    "SIGXCPU": 1204,
    "SIGBUS": 1206,
    "SIGINT": 1208,
    "SIGKILL": 1200,
}
_SIGNAL_IN_REASON = re.compile(r"\((SIG[A-Z0-9]+)\)")


def describe(code: int) -> ErrorCode:
    """The code's entry; a code not in the table is in category `other`."""
    return TABLE.get(code) or ErrorCode(code, "", OTHER, f"error {code}")


def classify(
    exit_code: int | None, reason: str = "", reported_code: int | None = None
) -> ErrorCode | None:
    """The error of a failed job from its pilot's report: the code the pilot gave, else the
    signal named in its reason ("exit code 139 (SIGSEGV)"), else any other non-zero exit
    code as a payload failure (1305). None when nothing says it failed (exit code 0 or none,
    no code given)."""
    if reported_code is not None:
        return describe(reported_code)
    found = _SIGNAL_IN_REASON.search(reason)
    if found and found.group(1) in SIGNAL_CODES:
        return TABLE[SIGNAL_CODES[found.group(1)]]
    if exit_code not in (None, 0):
        return TABLE[PAYLOAD_FAILURE]
    return None


def label(code: int | None, category: str) -> str:
    """How a page names an error: "1099 stage-in", or the category alone without a code."""
    if code is None:
        return category or "no error code"
    return f"{code} {category or describe(code).category}"
