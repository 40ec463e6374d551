"""A seeded simulation, pure: three groups with steady demand; matches drawn proportionally to
the TaskQueue priorities. Achieved shares follow JobShares; the corrector pulls back an
over-served group within its bounds."""

import random
from collections import Counter

from matcher.matching import race_order
from shares.corrections import SEED_EXAMPLE, corrections, parse_instances
from shares.priorities import Group, TaskQueueLoad, taskqueue_priorities

GROUPS = {1: Group(1, 10000, False), 2: Group(2, 300, True), 3: Group(3, 40000, True)}
TARGET = {g: GROUPS[g].job_share / 50300 for g in GROUPS}
# Steady demand: every group always has waiting jobs (two TaskQueues each, one owner).
TQS = [TaskQueueLoad(10 * g + k, 100 + g, g, 50, 50) for g in GROUPS for k in (1, 2)]
GROUP_OF = {tq.id: tq.group_id for tq in TQS}


def draw(priorities, n, rng):
    ids = list(priorities)
    weights = [priorities[i] for i in ids]
    return Counter(GROUP_OF[ids[race_order(weights, rng, "proportional")[0]]] for _ in range(n))


def test_achieved_shares_follow_job_shares_within_one_point():
    got = draw(taskqueue_priorities(TQS, GROUPS), 10_000, random.Random(42))
    for g in GROUPS:
        assert abs(got[g] / 10_000 - TARGET[g]) < 0.01, (g, got[g] / 10_000, TARGET[g])


def test_correction_pulls_an_over_served_group_back_within_its_bounds():
    [inst, _] = parse_instances(SEED_EXAMPLE)  # the groups instance: 80/20, max global 3
    rng = random.Random(7)
    shares = {(g, None): GROUPS[g].job_share for g in GROUPS}
    # History: lhcb_mc (2) ran half of everything for the past week.
    week = Counter({2: 5000, 1: 1000, 3: 4000})
    hour = Counter({2: 500, 1: 100, 3: 400})
    mc_share_by_round, factors = [], []
    for _ in range(10):
        usage = [{(g, None): week[g] for g in GROUPS}, {(g, None): hour[g] for g in GROUPS}]
        final, _ = corrections(inst, shares, usage)
        factors.append(final[(2, None)])
        got = draw(taskqueue_priorities(TQS, GROUPS, final), 1000, rng)
        mc_share_by_round.append(got[2] / 1000)
        week.update(got)
        hour = got
    # Direction: while over-served the factor is below 1 ...
    assert factors[0] < 1
    # ... and bounded: never below 1 / MaxGlobalCorrectionFactor.
    assert min(factors) >= 1 / inst.max_global_correction - 1e-12
    # The factor 0.8 * 1/2 + 0.2 * 1/5 = 0.44 at the start, as the clamps give it.
    assert abs(factors[0] - 0.44) < 1e-9
    # While corrected, mc runs less than its uncorrected target (0.6 %), pulling its week back.
    assert sum(mc_share_by_round[:5]) / 5 < TARGET[2]
    assert week[2] / sum(week.values()) < 0.5
