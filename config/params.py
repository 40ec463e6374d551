"""Parameters of the foundation. Each app registers its own tunables in its gdpconfig module."""

import re
from itertools import pairwise

from config.gdpconfig import INT, INT_LIST, Param, register

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
