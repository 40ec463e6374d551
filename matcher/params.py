"""The matcher's live parameters (gdpconfig)."""

from config.gdpconfig import CHOICE, Param, register
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
