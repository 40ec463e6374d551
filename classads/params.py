"""The ClassAd matchmaking's live parameters (gdpconfig)."""

from config.gdpconfig import INT, STR_LIST, Param, register

register(
    Param(
        name="SiteAdSiteAttributes",
        kind=STR_LIST,
        default=["GridSite", "MOP_SITE"],
        category="classads",
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
