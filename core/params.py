"""Parameters of the foundation. Each app registers its own tunables in its gdpconfig module."""

import re
from itertools import pairwise

from core.gdpconfig import INT, INT_LIST, Param, register

SETUP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _strictly_increasing_positive(values: list[int]) -> str | None:
    if not values:
        return "needs at least one segment"
    if any(v <= 0 for v in values):
        return "segments must be positive integers"
    if any(b <= a for a, b in pairwise(values)):
        return "segments must be strictly increasing"
    return None


def _setup_name(value: str) -> str | None:
    """A Setup is a name (LHCb-Production): it is shown, filtered on and sent to pilots."""
    if not SETUP_NAME.fullmatch(value):
        return "a Setup name: letters, digits, - _ and ., starting with a letter or digit"
    return None


CPU_SEGMENTS = register(
    Param(
        name="CPUSegments",
        kind=INT_LIST,
        default=[500, 5000, 50000, 300000],
        minimum=1,
        maximum=2**31 - 1,  # TaskQueue.cpu_time, a PositiveIntegerField
        unit="s",
        category="matching",
        help=(
            "TaskQueue CPU-time segments. A job's CPUTime goes to the first segment at least as "
            "large, or to the last one above it; a TaskQueue matches a resource whose CPU time is "
            "at least its segment."
        ),
        check=_strictly_increasing_positive,
    )
)

MAX_RESCHEDULING = register(
    Param(
        name="MaxRescheduling",
        kind=INT,
        default=3,
        minimum=0,
        maximum=100,
        category="jobs",
        help="How many times a job may be rescheduled (DIRAC's JobScheduling/MaxRescheduling).",
    )
)

MAX_JOBS_PER_SUBMISSION = register(
    Param(
        name="MaxJobsPerSubmission",
        kind=INT,
        default=10000,
        minimum=1,
        maximum=1000000,
        category="jobs",
        help="The largest list of jobs one API submission may carry (it is all-or-nothing).",
    )
)

CYCLE_STALE_SECONDS = register(
    Param(
        name="CycleStaleSeconds",
        kind=INT,
        default=1800,
        minimum=60,
        maximum=86400,
        unit="s",
        category="cycles",
        help=(
            "A cycle run still marked running after this long is taken to have died; the next "
            "run marks it abandoned and proceeds."
        ),
    )
)

DEFAULT_SETUP = register(
    Param(
        name="DefaultSetup",
        kind="str",
        default="LHCb-Production",
        category="jobs",
        help="The Setup a job gets when its submission names none.",
        max_length=64,  # Job.setup, Task.setup and TaskQueue.setup
        check=_setup_name,
    )
)

# Throttling (core/throttling.py): counted in the database, so the limits hold across every
# worker process and host. 0 turns a limit off.
AUTH_FAILURES_PER_ACCOUNT = register(
    Param(
        name="AuthFailuresPerAccount",
        kind=INT,
        default=10,
        minimum=0,
        maximum=1000000,
        category="security",
        help=(
            "Failed logins (token endpoint, login page, admin) on one user name within "
            "AuthFailureWindowSeconds after which that user name's logins answer 429 with "
            "Retry-After until the window ends, the right password included. A successful "
            "login clears the count. 0: no limit."
        ),
    )
)

AUTH_FAILURES_PER_ADDRESS = register(
    Param(
        name="AuthFailuresPerAddress",
        kind=INT,
        default=50,
        minimum=0,
        maximum=1000000,
        category="security",
        help=(
            "Failed logins from one client address (REMOTE_ADDR: behind a proxy, the proxy's), "
            "whatever the user names, within AuthFailureWindowSeconds after which logins from "
            "that address answer 429 with Retry-After until the window ends. 0: no limit."
        ),
    )
)

AUTH_FAILURE_WINDOW_SECONDS = register(
    Param(
        name="AuthFailureWindowSeconds",
        kind=INT,
        default=900,
        minimum=1,
        maximum=86400,
        unit="s",
        category="security",
        help=(
            "The window failed logins are counted in: it begins at the first failure, and a "
            "refused account or address is taken again when it ends."
        ),
    )
)

API_USER_RATE_PER_MINUTE = register(
    Param(
        name="ApiUserRatePerMinute",
        kind=INT,
        default=1200,
        minimum=0,
        maximum=1000000,
        unit="requests/min",
        category="security",
        help=(
            "API requests one user may make per minute (a window from the first); beyond it "
            "429 with Retry-After. The pilots' calls (match, registration, status reports, "
            "heartbeats, sandboxes) are not counted. 0: no limit."
        ),
    )
)
