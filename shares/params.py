"""Fair-share parameters (gdpconfig): consolidation, the correction switch and the correctors."""

from core.gdpconfig import BOOL, CHOICE, INT, JSON, STR_LIST, Param, register
from core.gdpconfig_shapes import Number, Obj, Text
from shares.corrections import MAX_TIME_SPAN, SEED_EXAMPLE, parse_instances
from shares.priorities import AVG, SUM

# The seed's layout: instances (CorrectionRecord.instance, 100 characters) of options and named
# slices; _check_wmshistory then reads it as the corrector does (one instance per group, ...).
WMSHISTORY = Obj(
    rest=Obj(
        {"Group": Text(64, empty=False), "MaxGlobalCorrectionFactor": Number(1, 1000)},
        required=("MaxGlobalCorrectionFactor",),
        rest=Obj(
            {
                "TimeSpan": Number(1, MAX_TIME_SPAN, integer=True),
                "Weight": Number(0, 1e6),
                "MaxCorrection": Number(1, 1000),
            },
            required=("TimeSpan", "Weight", "MaxCorrection"),
        ),
        max_keys=26,  # the options and up to 24 slices, each a usage query per cycle
    ),
    rest_key=Text(100, empty=False),
    max_keys=50,
)


def _check_wmshistory(value) -> str | None:
    try:
        parse_instances(value)
    except ValueError as exc:
        return str(exc)
    return None


def _check_wmshistory_groups(value) -> str | None:
    """On an edit: each instance's Group exists and has no JobSharing."""
    from django.db import DatabaseError

    from shares.models import GridGroup

    instances = parse_instances(value)

    for inst in instances:
        if inst.group is None:
            continue
        try:
            group = GridGroup.objects.filter(name=inst.group).first()
        except DatabaseError:
            return None  # before migrations: validated again on the next edit
        if group is None:
            return f"{inst.name}.Group: unknown group {inst.group}"
        if group.job_sharing:
            return (
                f"{inst.name}.Group: {inst.group} has JobSharing, so its users are one entity; "
                "correcting between them makes no sense"
            )
    return None


register(
    Param(
        name="PRIORITY_CONSOLIDATION",
        kind=CHOICE,
        default=SUM,
        choices=(SUM, AVG),
        category="shares",
        help=(
            "J of a TaskQueue: sum = its sum of UserPriorities over its entity's total (the "
            "seed); avg = with average UserPriorities instead, so N equal TaskQueues get 1/N."
        ),
    )
)
register(
    Param(
        name="EnableSharesCorrection",
        kind=BOOL,
        default=False,
        category="shares",
        help="Correct the shares from the running-jobs history (the WMSHistory corrector).",
    )
)
register(
    Param(
        name="ShareCorrectorsToStart",
        kind=STR_LIST,
        default=["WMSHistory"],
        choices=("WMSHistory",),
        category="shares",
        help="The correctors used in each priority cycle.",
    )
)
register(
    Param(
        name="WMSHistory",
        kind=JSON,
        default=SEED_EXAMPLE,
        category="shares",
        help=(
            "WMSHistory corrector instances, as in the seed: an instance without Group corrects "
            "between groups, one with Group = g between the users of g (not for a JobSharing "
            "group); each has MaxGlobalCorrectionFactor and slices {TimeSpan s, Weight, "
            "MaxCorrection}."
        ),
        shape=WMSHISTORY,
        check=_check_wmshistory,
        check_on_set=_check_wmshistory_groups,
    )
)
register(
    Param(
        name="UsageFineHours",
        kind=INT,
        default=24,
        minimum=1,
        maximum=24 * 366,
        unit="h",
        category="shares",
        help="Usage samples keep 1-minute resolution this long, then are thinned to 1 hour.",
    )
)
register(
    Param(
        name="UsageHistoryDays",
        kind=INT,
        default=8,
        minimum=1,
        maximum=3660,
        unit="d",
        category="shares",
        help="Usage samples older than this are deleted (keep more than the longest TimeSpan).",
    )
)
