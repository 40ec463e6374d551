"""The pilot director's live parameters (gdpconfig)."""

from urllib.parse import urlsplit

from core.gdpconfig import BOOL, FLOAT, INT, JSON, STR, STR_LIST, Param, register
from core.gdpconfig_shapes import Obj, Text

# --- the pilot director (docs/developer-guide.md, The TaskQueue director; DIRAC's defaults) ----
POOL_BACKENDS = ("simulated", "local", "panda", "external")
# A pool name is stored in Pilot.submit_pool and DirectorDecision.submit_pool (64 characters).
POOL_NAME = 64
MAX_CPU_SECONDS = 31_536_000  # a year of CPU seconds, as a job's CPUTime (MAX_CPU_TIME)


def _no_empty_name(values: list[str]) -> str | None:
    return "names must not be empty" if any(not v for v in values) else None


def _http_url(value: str) -> str | None:
    """The URL a local pilot is started with (its --url): http(s), a host, no spaces."""
    try:
        parts = urlsplit(value)
    except ValueError:  # an unbalanced [IPv6 host]
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or " " in value:
        return "an http:// or https:// URL with a host"
    return None


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
    maximum=MAX_CPU_SECONDS,
)
_reg(
    "extraPilotFraction",
    FLOAT,
    0.2,
    "Extra fraction of waiting pilots allowed with respect to the TaskQueue's waiting jobs "
    "(the seed's cap: with SiteDirectorPilotCap off).",
    minimum=0,
    maximum=100,
)
_reg(
    "extraPilots",
    INT,
    4,
    "Extra waiting pilots always allowed per TaskQueue (the seed's cap: with "
    "SiteDirectorPilotCap off).",
    minimum=0,
    maximum=10_000,
)
_reg(
    "PilotsPerJobTerm",
    BOOL,
    True,
    "The seed's pilotsPerJob term: half of each director cycle's pilots go to TaskQueues by "
    "their waiting jobs, whatever their priority. Off: all go by priority, so a group with a "
    "large backlog and a small share gets no more pilots for it.",
)
_reg(
    "maxPilotWaitingHours",
    FLOAT,
    6.0,
    "A pilot waiting longer than this in the middleware no longer counts as waiting.",
    unit="h",
    minimum=0,
    maximum=24 * 366,
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
    max_length=POOL_NAME,
    check=_no_empty_name,
)
_reg(
    "DefaultSubmitPools",
    STR_LIST,
    ["gLite"],
    "Pools for TaskQueues that name none.",
    max_length=POOL_NAME,
    check=_no_empty_name,
)
_reg(
    "SubmitPoolBackends",
    JSON,
    {"gLite": "simulated", "DIRAC": "external", "SAM": "simulated", "Local": "local"},
    "The backend of each submit pool: simulated (a simulated CE), local (a real pilot process), "
    "panda (PanDA's own pilot, a real process at a CE's PanDA queue) or external (pilots "
    "started by hand or by another director: this one sends none; the seed's TaskQueue "
    "director handles gLite and SAM only).",
    shape=Obj(rest=Text(choices=POOL_BACKENDS), rest_key=Text(POOL_NAME, empty=False)),
)
_reg(
    "GenericPilotDN",
    STR,
    "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=pilot",
    "Identity of generic pilots.",
    max_length=255,  # Pilot.owner_dn, Credential.dn
    check=lambda v: None if v.startswith("/") else "a DN: /DC=.../CN=...",
)
_reg(
    "GenericPilotGroup",
    STR,
    "lhcb_pilot",
    "Group of generic pilots.",
    max_length=64,  # Pilot.owner_group, GridGroup.name
    check=lambda v: None if v else "must not be empty",
)
_reg("minThreadsInPool", INT, 1, "Submit pool: threads kept.", minimum=1, maximum=64)
_reg("maxThreadsInPool", INT, 4, "Submit pool: most threads at once.", minimum=1, maximum=64)
_reg(
    "totalThreadsInPool",
    INT,
    40,
    "Submit pool: most submissions queued at once; beyond, a TaskQueue waits a cycle.",
    minimum=1,
    maximum=100_000,
)
_reg(
    "PilotProxyMinDays",
    FLOAT,
    5.0,
    "Least lifetime left on a pilot credential.",
    unit="d",
    minimum=0,
    maximum=366,
)
_reg("ListMatch", BOOL, True, "List-match the CEs that fit a TaskQueue before submitting.")
_reg(
    "LocalPilotURL",
    STR,
    "http://127.0.0.1:8000",
    "Where pilots of the local backend reach this server.",
    check=_http_url,
)
_reg(
    "LocalPilotMaxSeconds",
    INT,
    120,
    "Run time limit of a local pilot.",
    unit="s",
    minimum=1,
    maximum=7 * 86400,
)
_reg(
    "LocalPilotStartSeconds",
    INT,
    120,
    "How long a local pilot may stay silent after its start before the director counts it "
    "as never coming (Aborted) and sends another.",
    unit="s",
    minimum=5,
    maximum=86400,
)
_reg(
    "SiteDirectorPilotCap",
    BOOL,
    True,
    "DIRAC's later SiteDirector caps instead of the seed's: a TaskQueue may have as many pilots "
    "waiting as it has waiting jobs (J - waitingPilots, no extraPilots nor extraPilotFraction), "
    "and a (simulated) CE takes no more new pilots in a cycle than the waiting jobs a pilot "
    "there could run less the pilots already waiting there. Off: the seed's cap alone, "
    "int((1 + extraPilotFraction) * J) + extraPilots - waitingPilots, which sends TaskQueues "
    "of one or two jobs five or six pilots (bench/fairshare.py --scale full, 3 simulated days: "
    "16.8 % of the pilots that ran found no job with it off, 7.1 % with it on; the largest "
    "share gap 1.1 and 1.2 points).",
)
