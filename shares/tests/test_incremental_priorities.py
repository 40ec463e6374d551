"""The incremental priority engine against the full one: after any sequence of changes (shares
edited, JobSharing switched, jobs joining and leaving TaskQueues, users' first and last waiting
jobs, TaskQueues created and dropped, factors changed, consolidation switched) it holds exactly
what a full computation gives, bit for bit, and it recomputes nothing when nothing changed."""

from __future__ import annotations

import random

import pytest

from shares.priorities import (
    AVG,
    MIN_PRIORITY,
    SUM,
    Group,
    IncrementalPriorities,
    TaskQueueLoad,
    taskqueue_priorities,
)


def full(loads, groups, corrections, consolidation):
    out = dict.fromkeys((tq.id for tq in loads), MIN_PRIORITY)
    out.update(taskqueue_priorities(loads, groups, corrections, consolidation))
    return out


class World:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.groups = {
            g: Group(g, float(self.rng.choice([0, 100, 300, 10000])), g % 2 == 0)
            for g in range(1, 5)
        }
        self.tqs: dict[int, TaskQueueLoad] = {}
        self.next_id = 1
        self.corrections: dict[tuple[int, int | None], float] = {}
        self.consolidation = SUM
        for _ in range(60):
            self.create()

    def create(self):
        g = self.rng.choice(list(self.groups))
        jobs = self.rng.choice([0, 1, 3, 10])
        prio = sum(self.rng.randint(0, 5) for _ in range(jobs))
        self.tqs[self.next_id] = TaskQueueLoad(self.next_id, self.rng.randint(1, 8), g, prio, jobs)
        self.next_id += 1

    def change(self):
        rng = self.rng
        what = rng.choice(["jobs", "jobs", "jobs", "create", "drop", "share", "sharing", "factor"])
        if what == "jobs" and self.tqs:
            tq = self.tqs[rng.choice(list(self.tqs))]
            jobs = max(0, tq.jobs + rng.choice([-3, -1, 1, 2, -tq.jobs]))
            prio = sum(rng.randint(0, 5) for _ in range(jobs))
            self.tqs[tq.id] = tq._replace(jobs=jobs, priority_sum=prio)
        elif what == "create":
            self.create()
        elif what == "drop" and self.tqs:
            del self.tqs[rng.choice(list(self.tqs))]
        elif what == "share":
            g = rng.choice(list(self.groups))
            self.groups[g] = Group(
                g, rng.choice([0.0, 50.0, 300.0, 7000.0]), self.groups[g].job_sharing
            )
        elif what == "sharing":
            g = rng.choice(list(self.groups))
            old = self.groups[g]
            self.groups[g] = Group(g, old.job_share, not old.job_sharing)
        elif what == "factor":
            key = (rng.choice(list(self.groups)), rng.choice([None, *range(1, 9)]))
            if rng.random() < 0.2:
                self.corrections.pop(key, None)
            else:
                self.corrections[key] = rng.uniform(1 / 3, 3)


@pytest.mark.parametrize("seed", range(20))
def test_after_random_changes_the_incremental_engine_holds_exactly_the_full_computation(seed):
    world = World(seed)
    engine = IncrementalPriorities()
    engine.update(world.tqs.values(), world.groups, world.corrections, world.consolidation)
    for step in range(60):
        for _ in range(world.rng.randint(1, 4)):
            world.change()
        if step == 30:
            world.consolidation = AVG
        before = dict(engine.priorities)
        changed = engine.update(
            list(world.tqs.values()), world.groups, world.corrections, world.consolidation
        )
        expected = full(
            list(world.tqs.values()), world.groups, world.corrections, world.consolidation
        )
        assert engine.priorities == expected  # exact equality, not approx
        # It reports exactly the priorities that differ from what it held before.
        assert changed == {t: p for t, p in expected.items() if before.get(t) != p}


def test_an_update_with_nothing_changed_recomputes_and_reports_nothing():
    world = World(7)
    engine = IncrementalPriorities()
    first = engine.update(world.tqs.values(), world.groups, world.corrections, SUM)
    assert len(first) == len(world.tqs)
    assert engine.update(list(world.tqs.values()), dict(world.groups), {}, SUM) == {}
    assert engine.recomputed == 0


def test_one_users_new_jobs_recompute_only_that_users_taskqueues():
    groups = {1: Group(1, 1000.0, False)}
    tqs = [
        TaskQueueLoad(i, owner_id=i % 10, group_id=1, priority_sum=i, jobs=i) for i in range(1, 101)
    ]
    engine = IncrementalPriorities()
    engine.update(tqs, groups, {}, SUM)
    tqs[4] = tqs[4]._replace(jobs=9, priority_sum=20)  # TaskQueue 5, user 5's
    changed = engine.update(tqs, groups, {}, SUM)
    assert engine.recomputed == 10  # user 5's ten TaskQueues, not the group's hundred
    assert set(changed) <= {t.id for t in tqs if t.owner_id == 5}
    assert engine.priorities == full(tqs, groups, {}, SUM)


def test_a_users_last_waiting_job_leaving_recomputes_the_whole_group():
    groups = {1: Group(1, 1000.0, False)}
    tqs = [TaskQueueLoad(1, 1, 1, 2, 2), TaskQueueLoad(2, 2, 1, 2, 2), TaskQueueLoad(3, 3, 1, 1, 1)]
    engine = IncrementalPriorities()
    engine.update(tqs, groups, {}, SUM)
    tqs[2] = tqs[2]._replace(jobs=0, priority_sum=0)
    changed = engine.update(tqs, groups, {}, SUM)
    assert changed == {1: 500.0, 2: 500.0, 3: MIN_PRIORITY}  # two users share the group now
