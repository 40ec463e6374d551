"""The ClassAd matchmaking's live parameters (gdpconfig)."""

import re

from core.gdpconfig import INT, STR_LIST, Param, register

# ClassAd attribute names (HTCondor: a letter or _, then letters, digits, _).
ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _attribute_names(values: list[str]) -> str | None:
    bad = [v for v in values if not ATTRIBUTE.fullmatch(v)]
    return f"not ClassAd attribute names: {', '.join(bad)}" if bad else None


register(
    Param(
        name="SiteAdSiteAttributes",
        kind=STR_LIST,
        default=["GridSite", "MOP_SITE"],
        category="classads",
        max_length=128,
        check=_attribute_names,
        help=(
            "Site ad attributes naming the DIRAC site that a matched DAG's nodes go to, the "
            "first present (text) wins; none present: the ad's Name."
        ),
    )
)
register(
    Param(
        name="DefaultNodeCPUTime",
        kind=INT,
        default=3600,
        unit="s",
        minimum=1,
        maximum=31_536_000,  # a job's CPUTime: at most a year (matcher's MAX_CPU_TIME)
        category="classads",
        help="CPU time of a job ad's node when the submission gives none.",
    )
)
register(
    Param(
        name="SiteAdSampleDays",
        kind=INT,
        default=7,
        unit="d",
        minimum=1,
        maximum=3660,
        category="classads",
        help="How long the CurMatches / MaxMatches history of the site ads is kept.",
    )
)
register(
    Param(
        name="NegotiatorQueueBatch",
        kind=INT,
        default=50,
        minimum=1,
        maximum=100000,
        category="classads",
        help=(
            "Jobs a queue (owner, group, autocluster) negotiates in one turn of the fair-share "
            "order; turns come in proportion to the queues' priorities. 1: job by job."
        ),
    )
)
