"""The matcher's live parameters (gdpconfig)."""

from core.gdpconfig import BOOL, CHOICE, FLOAT, INT, STR_LIST, Param, register
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
MATCH_CPU_SEGMENT_PRECEDENCE = register(
    Param(
        name="MatchCPUSegmentPrecedence",
        kind=BOOL,
        default=True,
        category="matching",
        help=(
            "The seed's step 2: a pilot takes the TaskQueues of the highest CPU segment it fits "
            "first, drawing by priority only inside it (lower segments when those are empty). "
            "Off: one draw by priority among every TaskQueue the pilot fits, whatever its "
            "segment (closer to the shares where CPUSegments are finer than the seed's four; "
            "with the seed's, bench/fairshare.py's shares were closer with it on)."
        ),
    )
)


# --- the web form's JDL (web/matcher/forms.py, matcher/jdl.py) --------------------------------
MAX_JDL_BYTES = register(
    Param(
        name="MaxJDLBytes",
        kind=INT,
        default=65536,
        minimum=1024,
        maximum=1048576,
        unit="B",
        category="jobs",
        help="The largest JDL the Submit a job form takes (UTF-8 bytes); it is stored with the "
        "job.",
    )
)
MAX_JDL_ATTRIBUTES = register(
    Param(
        name="MaxJDLAttributes",
        kind=INT,
        default=200,
        minimum=10,
        maximum=10000,
        category="jobs",
        help="The most attributes a JDL from the Submit a job form may have.",
    )
)
PAYLOAD_WALL_FACTOR = register(
    Param(
        name="PayloadWallFactor",
        kind=FLOAT,
        default=2.0,
        minimum=1.0,
        maximum=100.0,
        category="jobs",
        help="A payload's wall-clock limit is its job's CPU time times this (the pilot takes "
        "the lesser of that and its own time left); over it, the pilot kills it.",
    )
)
# A job with an executable needs a pilot that runs processes: where simulated pilots share the
# grid with real ones (the demo), these route it to the real ones.
PAYLOAD_TAGS = register(
    Param(
        name="PayloadTags",
        kind=STR_LIST,
        default=[],
        max_length=64,
        category="jobs",
        help="Tags a job with an executable requires, added at submission (only pilots offering "
        "them take it: e.g. real pilots where simulated ones also run). Empty: none added.",
    )
)
PAYLOAD_SUBMIT_POOLS = register(
    Param(
        name="PayloadSubmitPools",
        kind=STR_LIST,
        default=[],
        max_length=64,
        category="jobs",
        help="Submit pools for a job with an executable that names none (e.g. Local: the "
        "director starts real pilot processes for it). Empty: the usual DefaultSubmitPools.",
    )
)
MAX_BULK_JOBS = register(
    Param(
        name="MaxBulkJobs",
        kind=INT,
        default=1000,
        minimum=1,
        maximum=100000,
        category="jobs",
        help="The most jobs one bulk kill or reschedule (the jobs list's, the API's) acts on, "
        "in one transaction.",
    )
)
