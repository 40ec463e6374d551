"""The matcher's live parameters (gdpconfig)."""

from config.gdpconfig import BOOL, CHOICE, FLOAT, INT, JSON, STR, STR_LIST, Param, register
from matcher.matching import DRAW_MODES, PROPORTIONAL

MATCH_DRAW_MODE = register(
    Param(
        name="MatchDrawMode",
        kind=CHOICE,
        default=PROPORTIONAL,
        choices=DRAW_MODES,
        category="matching",
        help=(
            "How TaskQueues and UserPriorities are drawn. proportional: each is picked with "
            "probability exactly proportional to its priority (key -ln(U)/priority). dirac: the "
            "seed's literal ORDER BY RAND()/priority, which over-favours high priorities."
        ),
    )
)


# --- the pilot director (seeds/dirac-taskqueue-director.txt; defaults from DIRAC's agent) ------
POOL_BACKENDS = ("simulated", "local", "external")


def _reg(name, kind, default, help, **kw):
    return register(
        Param(name=name, kind=kind, default=default, help=help, category="pilots", **kw)
    )


_reg(
    "pilotsPerIteration",
    FLOAT,
    40.0,
    "Pilots to submit per director cycle.",
    minimum=0,
    maximum=1e6,
)
_reg(
    "AdaptivePilotsPerIteration",
    BOOL,
    False,
    "The seed's proposed fix: scale pilotsPerIteration by waiting / running jobs (1x when equal, "
    "at most AdaptiveMaxFactor times, at least 1 pilot).",
)
_reg("AdaptiveMaxFactor", FLOAT, 5.0, "Ceiling of the adaptive scaling.", minimum=1, maximum=100)
_reg(
    "lowestCPUBoost",
    INT,
    7200,
    "Lower limit of the CPU time used in the boost maxCPU / max(CPU, lowestCPUBoost).",
    unit="s",
    minimum=1,
)
_reg(
    "extraPilotFraction",
    FLOAT,
    0.2,
    "Extra fraction of waiting pilots allowed with respect to the TaskQueue's waiting jobs.",
    minimum=0,
    maximum=100,
)
_reg("extraPilots", INT, 4, "Extra waiting pilots always allowed per TaskQueue.", minimum=0)
_reg(
    "maxPilotWaitingHours",
    FLOAT,
    6.0,
    "A pilot waiting longer than this in the middleware no longer counts as waiting.",
    unit="h",
    minimum=0,
)
_reg(
    "PrivatePilotFraction",
    FLOAT,
    0.5,
    "Fraction of private pilots for a TaskQueue that does not ask for private pilots.",
    minimum=0,
    maximum=1,
)
_reg(
    "SubmitPools",
    STR_LIST,
    ["gLite", "Local", "DIRAC", "SAM"],
    "Submit pools known to the system.",
)
_reg("DefaultSubmitPools", STR_LIST, ["gLite"], "Pools for TaskQueues that name none.")
_reg(
    "SubmitPoolBackends",
    JSON,
    {"gLite": "simulated", "DIRAC": "external", "SAM": "simulated", "Local": "local"},
    "The backend of each submit pool: simulated (a simulated CE), local (a real pilot process) "
    "or external (pilots started by hand or by another director: this one sends none; the "
    "seed's TaskQueue director handles gLite and SAM only).",
    check=lambda v: (
        None
        if isinstance(v, dict) and all(b in POOL_BACKENDS for b in v.values())
        else "an object mapping pools to simulated, local or external"
    ),
)
_reg(
    "GenericPilotDN",
    STR,
    "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=pilot",
    "Identity of generic pilots.",
)
_reg("GenericPilotGroup", STR, "lhcb_pilot", "Group of generic pilots.")
_reg("minThreadsInPool", INT, 1, "Submit pool: threads kept.", minimum=1, maximum=64)
_reg("maxThreadsInPool", INT, 4, "Submit pool: most threads at once.", minimum=1, maximum=64)
_reg(
    "totalThreadsInPool",
    INT,
    40,
    "Submit pool: most submissions queued at once; beyond, a TaskQueue waits a cycle.",
    minimum=1,
)
_reg("PilotProxyMinDays", FLOAT, 5.0, "Least lifetime left on a pilot credential.", unit="d")
_reg("ListMatch", BOOL, True, "List-match the CEs that fit a TaskQueue before submitting.")
_reg(
    "LocalPilotURL",
    STR,
    "http://127.0.0.1:8000",
    "Where pilots of the local backend reach this server.",
)
_reg("LocalPilotMaxSeconds", INT, 120, "Run time limit of a local pilot.", unit="s", minimum=1)
_reg(
    "SimulatedPilotSeconds",
    JSON,
    {"Submitted": 30, "Scheduled": 60, "Aborted": 0.05, "JobFailed": 0.05, "CPUScale": 0.01},
    "The simulated CE: seconds in Submitted and Scheduled, the chance a pilot aborts and a "
    "job fails, and job run time = CPUTime x CPUScale seconds.",
    check=lambda v: None if isinstance(v, dict) else "an object",
)
