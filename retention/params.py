"""How long finished work is kept (gdpconfig), like UsageHistoryDays for the usage samples.

Each kind has an age in days; 0 keeps it forever. Defaults follow DIRAC's cleaning agents where
they have one (JobCleaningAgent RemoveStatusDelay: 7 days; PilotStatusAgent ClearPilotsDelay:
30 days).
"""

import os

from core.gdpconfig import BOOL, INT, STR, Param, register

AGES = {  # kind -> (parameter, default days, what it covers)
    "jobs": (
        "RetentionJobDays",
        7,
        "Jobs in a final state (finished, failed, cancelled, closed) for this long are deleted "
        "with their status history, unless their task or job ad is still live.",
    ),
    "pilots": (
        "RetentionPilotDays",
        30,
        "Pilots in a final state (Done, Failed, Aborted) for this long are deleted with their "
        "status history.",
    ),
    "cycle_runs": (
        "RetentionCycleRunDays",
        14,
        "Cycle runs older than this are deleted; the last successful run of each cycle stays.",
    ),
    "director_decisions": (
        "RetentionDirectorDecisionDays",
        14,
        "The director's per-TaskQueue decisions older than this are deleted.",
    ),
    "brokerage_runs": (
        "RetentionBrokerageRunDays",
        14,
        "Brokerage decisions (with their candidate traces) older than this are deleted; the "
        "latest decision of each kind for each task stays.",
    ),
    "timeout_actions": (
        "RetentionTimeoutActionDays",
        14,
        "Timeout rule actions older than this are deleted.",
    ),
    "job_ads": (
        "RetentionJobAdDays",
        14,
        "ClassAd job and DAG ads completed or removed (the negotiation history) this long ago "
        "are deleted.",
    ),
}

for name, default, text in AGES.values():
    register(
        Param(
            name=name,
            kind=INT,
            default=default,
            minimum=0,
            maximum=36500,
            unit="d",
            category="retention",
            help=f"{text} 0 keeps them forever.",
        )
    )

register(
    Param(
        name="RetentionBatchSize",
        kind=INT,
        default=1000,
        minimum=1,
        maximum=10000,
        category="retention",
        help=(
            "Rows deleted per transaction: each batch locks only its own rows, for as long as "
            "it takes to export and delete them."
        ),
    )
)
register(
    Param(
        name="RetentionMaxSecondsPerRun",
        kind=INT,
        default=120,
        minimum=1,
        maximum=240,
        unit="s",
        category="retention",
        help=(
            "A retention run stops starting new batches after this long; the next run goes on "
            "(keeps every run under the worker's task timeout)."
        ),
    )
)
register(
    Param(
        name="RetentionExport",
        kind=BOOL,
        default=False,
        category="retention",
        help=(
            "Write every row as JSON lines to RetentionExportDirectory before deleting it; a "
            "batch whose export fails is not deleted."
        ),
    )
)


def _absolute_or_empty(value: str) -> str | None:
    if value and not os.path.isabs(value):
        return "must be an absolute path (a directory on the worker hosts)"
    return None


register(
    Param(
        name="RetentionExportDirectory",
        kind=STR,
        default="",
        category="retention",
        help=(
            "Where the worker running the retention cycle writes the export, one file per kind "
            "and run (<kind>/<kind>-<time>-run<id>.jsonl); created when missing."
        ),
        check=_absolute_or_empty,
    )
)
