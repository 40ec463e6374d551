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

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

MIN_PRIORITY = 0.001
SUM, AVG = "sum", "avg"


@dataclass(frozen=True)
class Group:
    id: int
    job_share: float
    job_sharing: bool


class TaskQueueLoad(NamedTuple):
    """A TaskQueue as the priority engine sees it: owner, group and its waiting jobs. A tuple:
    built straight from a database row, compared at C speed between two runs."""

    id: int
    owner_id: int
    group_id: int
    priority_sum: int  # sum of the UserPriorities of its waiting jobs
    jobs: int


def entity_of(tq: TaskQueueLoad, groups: Mapping[int, Group]) -> tuple[int, int | None]:
    """(group, None) for a JobSharing group's TaskQueue, (group, user) otherwise."""
    return (tq.group_id, None) if groups[tq.group_id].job_sharing else (tq.group_id, tq.owner_id)


Entity = tuple[int, int | None]


def entity_share(
    entity: Entity,
    group: Group,
    n_users: int,
    corrections: Mapping[Entity, float],
) -> float:
    """Corrected share of one entity of `group`, whose group has `n_users` users with waiting
    jobs (ignored for a JobSharing group)."""
    group_id, user_id = entity
    share = group.job_share if user_id is None else group.job_share / n_users
    share *= corrections.get((group_id, None), 1.0)
    if user_id is not None:
        share *= corrections.get((group_id, user_id), 1.0)
    return share


def entity_priorities(
    members: Iterable[TaskQueueLoad], share: float, consolidation: str
) -> dict[int, float]:
    """{TaskQueue id: priority} of one entity's TaskQueues with waiting jobs. The total is an
    exactly rounded sum (math.fsum), so the result does not depend on the TaskQueues' order:
    a recomputation of one entity gives bit for bit what a recomputation of all gives."""
    live = [tq for tq in members if tq.jobs > 0]
    weights = [
        tq.priority_sum if consolidation == SUM else tq.priority_sum / tq.jobs for tq in live
    ]
    total = math.fsum(weights)
    out = {}
    for tq, w in zip(live, weights, strict=True):
        # Every job of the entity at UserPriority 0: its TaskQueues share the entity equally.
        j = w / total if total > 0 else 1.0 / len(live)
        out[tq.id] = max(MIN_PRIORITY, share * j)
    return out


def entity_shares(
    tqs: Iterable[TaskQueueLoad],
    groups: Mapping[int, Group],
    corrections: Mapping[Entity, float] | None = None,
) -> dict[Entity, float]:
    """Corrected share of every entity with waiting jobs.

    `corrections` maps (group, None) to the groups' instance factor and (group, user) to the
    factor of the instance correcting between the users of that group (missing: 1).
    """
    corrections = corrections or {}
    users_of: dict[int, set[int]] = defaultdict(set)
    entities: set[Entity] = set()
    for tq in tqs:
        if tq.jobs <= 0:
            continue
        e = entity_of(tq, groups)
        entities.add(e)
        if e[1] is not None:
            users_of[e[0]].add(e[1])
    return {e: entity_share(e, groups[e[0]], len(users_of[e[0]]), corrections) for e in entities}


def _check(consolidation: str) -> None:
    if consolidation not in (SUM, AVG):
        raise ValueError(f"unknown PRIORITY_CONSOLIDATION {consolidation!r}")


def taskqueue_priorities(
    tqs: Iterable[TaskQueueLoad],
    groups: Mapping[int, Group],
    corrections: Mapping[Entity, float] | None = None,
    consolidation: str = SUM,
) -> dict[int, float]:
    """{TaskQueue id: priority} for every TaskQueue with waiting jobs."""
    _check(consolidation)
    live = [tq for tq in tqs if tq.jobs > 0]
    shares = entity_shares(live, groups, corrections)
    members: dict[Entity, list[TaskQueueLoad]] = defaultdict(list)
    for tq in live:
        members[entity_of(tq, groups)].append(tq)
    out: dict[int, float] = {}
    for e, its in members.items():
        out.update(entity_priorities(its, shares[e], consolidation))
    return out


class IncrementalPriorities:
    """The priorities of every TaskQueue kept between runs, recomputed only where the inputs
    changed: `update` takes the whole current input (every TaskQueue's load, the groups, the
    correction factors, the consolidation) and recomputes only the entities whose inputs differ
    from the last run's; it returns the priorities that changed. After any sequence of updates
    `priorities` equals what `taskqueue_priorities` computes from the last input (MIN_PRIORITY
    for a TaskQueue without waiting jobs).

    What an entity's priorities depend on: its group (JobShare, JobSharing), the group's
    factor, its own factor, the loads of its TaskQueues and, outside JobSharing groups, the
    number of users with waiting jobs in the group (a change of which changes every entity of
    the group)."""

    def __init__(self) -> None:
        self.loads: dict[int, TaskQueueLoad] = {}
        self.groups: dict[int, Group] = {}
        self.corrections: dict[Entity, float] = {}
        self.consolidation: str | None = None
        self.priorities: dict[int, float] = {}
        # The TaskQueues with waiting jobs of each (group, user), whatever the group's JobSharing.
        self._live: dict[tuple[int, int], set[int]] = defaultdict(set)
        self._users_of: dict[int, set[int]] = defaultdict(set)
        self.recomputed = 0  # TaskQueues recomputed by the last update
        # Between set_loads and recompute: the loads and the users per group before, and the
        # TaskQueues touched since.
        self._pending: tuple[dict[int, TaskQueueLoad], dict[int, int], set[int]] | None = None

    def update(
        self,
        loads: Iterable[TaskQueueLoad],
        groups: Mapping[int, Group],
        corrections: Mapping[Entity, float],
        consolidation: str,
    ) -> dict[int, float]:
        """Bring the priorities to this input; returns {TaskQueue id: priority} of those that
        changed or are new (a TaskQueue no longer in `loads` is forgotten)."""
        self.set_loads(loads)
        return self.recompute(groups, corrections, consolidation)

    def waiting(self) -> dict[int, set[int]]:
        """{group: its users with waiting jobs} of the loads set last (the correctors' input)."""
        return {g: set(us) for g, us in self._users_of.items()}

    def set_loads(self, loads: Iterable[TaskQueueLoad]) -> None:
        """First half of `update`: take the TaskQueues' loads, note which changed."""
        new_loads = {tq.id: tq for tq in loads}
        if self._pending is None:
            self._pending = (self.loads, {g: len(us) for g, us in self._users_of.items()}, set())
        touched = self._pending[2]
        if new_loads == self.loads:  # the common case of a quiet grid, at C speed
            return
        for tq_id, old in self.loads.items():
            if new_loads.get(tq_id) != old:
                touched.add(tq_id)
                self._unlink(old)
        for tq_id, tq in new_loads.items():
            if self.loads.get(tq_id) != tq:
                touched.add(tq_id)
                if tq.jobs > 0:
                    self._live[(tq.group_id, tq.owner_id)].add(tq_id)
                    self._users_of[tq.group_id].add(tq.owner_id)
        self.loads = new_loads

    def recompute(
        self,
        groups: Mapping[int, Group],
        corrections: Mapping[Entity, float],
        consolidation: str,
    ) -> dict[int, float]:
        """Second half of `update`: recompute what the loads set since the last recompute and
        these groups, factors and consolidation changed; returns what `update` returns."""
        _check(consolidation)
        groups = dict(groups)
        dirty_groups: set[int] = set()
        dirty_users: set[tuple[int, int]] = set()
        old_loads, users_before, touched = self._pending or (
            self.loads,
            {g: len(us) for g, us in self._users_of.items()},
            set(),
        )
        self._pending = None
        new_loads = self.loads
        if consolidation != self.consolidation:
            dirty_groups.update(groups)
        for g in set(groups) | set(self.groups):
            if groups.get(g) != self.groups.get(g):
                dirty_groups.add(g)
        for key in set(corrections) | set(self.corrections):
            if corrections.get(key, 1.0) != self.corrections.get(key, 1.0):
                if key[1] is None:
                    dirty_groups.add(key[0])
                else:
                    dirty_users.add((key[0], key[1]))

        # `touched`: the TaskQueues whose own load changed, appeared or vanished.
        for tq_id in touched:
            for tq in (old_loads.get(tq_id), new_loads.get(tq_id)):
                if tq is not None:
                    dirty_users.add((tq.group_id, tq.owner_id))
            if tq_id not in new_loads:
                self.priorities.pop(tq_id, None)
        for g in users_before.keys() | self._users_of.keys():
            if users_before.get(g, 0) != len(self._users_of.get(g, ())):
                dirty_groups.add(g)  # every user's share is JobShare / U
        self.groups = groups
        self.corrections, self.consolidation = dict(corrections), consolidation

        for g, _u in dirty_users:
            group = groups.get(g)
            if group is not None and group.job_sharing:
                dirty_groups.add(g)
        computed: dict[int, float] = {}
        for g in dirty_groups:
            computed.update(self._group(g))
        for g, u in dirty_users:
            if g not in dirty_groups and g in groups:
                computed.update(self._user(g, u))
        for tq_id in touched & new_loads.keys():
            computed.setdefault(tq_id, MIN_PRIORITY)  # without waiting jobs: the floor
        self.recomputed = len(computed)
        changed = {t: p for t, p in computed.items() if self.priorities.get(t) != p}
        self.priorities.update(changed)
        return changed

    def _unlink(self, tq: TaskQueueLoad) -> None:
        key = (tq.group_id, tq.owner_id)
        live = self._live.get(key)
        if live is None or tq.id not in live:
            return
        live.discard(tq.id)
        if not live:
            del self._live[key]
            self._users_of[tq.group_id].discard(tq.owner_id)
            if not self._users_of[tq.group_id]:
                del self._users_of[tq.group_id]

    def _group(self, g: int) -> dict[int, float]:
        group = self.groups.get(g)
        users = sorted(self._users_of.get(g, ()))
        if group is None or not users:
            return {}
        if group.job_sharing:
            members = [self.loads[t] for u in users for t in self._live[(g, u)]]
            share = entity_share((g, None), group, len(users), self.corrections)
            return entity_priorities(members, share, self.consolidation or SUM)
        out: dict[int, float] = {}
        for u in users:
            out.update(self._user(g, u))
        return out

    def _user(self, g: int, u: int) -> dict[int, float]:
        live = self._live.get((g, u))
        if not live:
            return {}
        group = self.groups[g]
        share = entity_share((g, u), group, len(self._users_of[g]), self.corrections)
        return entity_priorities([self.loads[t] for t in live], share, self.consolidation or SUM)
