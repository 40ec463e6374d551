"""TaskQueue priorities from group JobShares: pure, no database (docs/developer-guide.md, Job
priorities and share corrections).

Entities: a JobSharing group is one entity whose share is its JobShare; in any other group each
user with waiting jobs is an entity with share JobShare / U (U such users). A corrected share is
the share times the correction factors (the groups' instance, then the group's users' instance).
A TaskQueue's priority is its entity's corrected share times J, where J is the TaskQueue's sum of
UserPriorities over the entity's total (PRIORITY_CONSOLIDATION = sum), or with each TaskQueue's
average UserPriority instead of the sum (avg: N equal TaskQueues get exactly 1/N each). Floored
at MIN_PRIORITY.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MIN_PRIORITY = 0.001
SUM, AVG = "sum", "avg"


@dataclass(frozen=True)
class Group:
    id: int
    job_share: float
    job_sharing: bool


@dataclass(frozen=True)
class TaskQueueLoad:
    """A TaskQueue as the priority engine sees it: owner, group and its waiting jobs."""

    id: int
    owner_id: int
    group_id: int
    priority_sum: int  # sum of the UserPriorities of its waiting jobs
    jobs: int


def entity_of(tq: TaskQueueLoad, groups: Mapping[int, Group]) -> tuple[int, int | None]:
    """(group, None) for a JobSharing group's TaskQueue, (group, user) otherwise."""
    return (tq.group_id, None) if groups[tq.group_id].job_sharing else (tq.group_id, tq.owner_id)


def entity_shares(
    tqs: Iterable[TaskQueueLoad],
    groups: Mapping[int, Group],
    corrections: Mapping[tuple[int, int | None], float] | None = None,
) -> dict[tuple[int, int | None], float]:
    """Corrected share of every entity with waiting jobs.

    `corrections` maps (group, None) to the groups' instance factor and (group, user) to the
    factor of the instance correcting between the users of that group (missing: 1).
    """
    corrections = corrections or {}
    users_of: dict[int, set[int]] = defaultdict(set)
    entities: set[tuple[int, int | None]] = set()
    for tq in tqs:
        if tq.jobs <= 0:
            continue
        e = entity_of(tq, groups)
        entities.add(e)
        if e[1] is not None:
            users_of[e[0]].add(e[1])
    shares = {}
    for group_id, user_id in entities:
        g = groups[group_id]
        share = g.job_share if user_id is None else g.job_share / len(users_of[group_id])
        share *= corrections.get((group_id, None), 1.0)
        if user_id is not None:
            share *= corrections.get((group_id, user_id), 1.0)
        shares[(group_id, user_id)] = share
    return shares


def taskqueue_priorities(
    tqs: Iterable[TaskQueueLoad],
    groups: Mapping[int, Group],
    corrections: Mapping[tuple[int, int | None], float] | None = None,
    consolidation: str = SUM,
) -> dict[int, float]:
    """{TaskQueue id: priority} for every TaskQueue with waiting jobs."""
    if consolidation not in (SUM, AVG):
        raise ValueError(f"unknown PRIORITY_CONSOLIDATION {consolidation!r}")
    live = [tq for tq in tqs if tq.jobs > 0]
    shares = entity_shares(live, groups, corrections)
    weight = {}
    totals: dict[tuple[int, int | None], float] = defaultdict(float)
    members: dict[tuple[int, int | None], int] = defaultdict(int)
    for tq in live:
        w = tq.priority_sum if consolidation == SUM else tq.priority_sum / tq.jobs
        weight[tq.id] = w
        e = entity_of(tq, groups)
        totals[e] += w
        members[e] += 1
    out = {}
    for tq in live:
        e = entity_of(tq, groups)
        # Every job of the entity at UserPriority 0: its TaskQueues share the entity equally.
        j = weight[tq.id] / totals[e] if totals[e] > 0 else 1.0 / members[e]
        out[tq.id] = max(MIN_PRIORITY, shares[e] * j)
    return out
