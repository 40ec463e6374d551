"""The matcher's live parameters (gdpconfig)."""

from config.gdpconfig import CHOICE, FLOAT, INT, Param, register
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


# --- the web form's JDL (matcher/forms.py, matcher/jdl.py) -------------------------------------
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
