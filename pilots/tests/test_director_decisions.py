"""The director's numbers by hand (docs/developer-guide.md, The TaskQueue director)."""

import random
from collections import Counter

import pytest

from pilots.director import (
    Settings,
    TaskQueueState,
    choose_submit_pool,
    effective_pilots_per_iteration,
    pilot_jdl,
    plan,
    poisson,
    submit_private_pilot,
)

S = Settings(
    pilots_per_iteration=40,
    lowest_cpu_boost=7200,
    extra_pilot_fraction=0.2,
    extra_pilots=4,
    max_cpu=300000,
)
TQS = [
    TaskQueueState(1, priority=30.0, jobs=10, cpu_time=50000),
    TaskQueueState(2, priority=10.0, jobs=30, cpu_time=500),  # boosted up to lowestCPUBoost
    TaskQueueState(3, priority=60.0, jobs=60, cpu_time=300000),
]


class FixedPoisson(random.Random):
    """An RNG whose Poisson draws are large (tens of thousands): every count is its cap."""

    def random(self):
        return 0.999


def test_lambda_is_the_priority_and_job_terms_times_the_cpu_boost():
    decisions = plan(TQS, {}, S, random.Random(1))
    # pilotsPerPriority = 40 / 100, pilotsPerJob = 40 / 100.
    lam = {d.tq.id: d.lam for d in decisions}
    assert lam[1] == pytest.approx((0.4 * 30 + 0.4 * 10) * 300000 / 50000)  # 96
    assert lam[2] == pytest.approx((0.4 * 10 + 0.4 * 30) * 300000 / 7200)  # boost capped at 7200
    assert lam[3] == pytest.approx((0.4 * 60 + 0.4 * 60) * 300000 / 300000)  # 48


def test_without_the_per_job_term_a_cycles_pilots_go_by_priority_alone():
    from dataclasses import replace

    off = replace(S, per_job_term=False)
    lam = {d.tq.id: d.lam for d in plan(TQS, {}, off, random.Random(1))}
    # pilotsPerPriority doubles (80 / 100) and pilotsPerJob is gone: TaskQueue 2's 30 jobs no
    # longer bring it pilots beyond its priority's.
    assert lam[1] == pytest.approx(0.8 * 30 * 300000 / 50000)
    assert lam[2] == pytest.approx(0.8 * 10 * 300000 / 7200)
    assert lam[3] == pytest.approx(0.8 * 60 * 300000 / 300000)
    # Before the CPU boost, the cycle's pilots add up to the same either way: 2 x 40.
    on = {d.tq.id: d.lam for d in plan(TQS, {}, S, random.Random(1))}
    unboost = {1: 50000 / 300000, 2: 7200 / 300000, 3: 1.0}
    assert sum(lam[i] * unboost[i] for i in lam) == pytest.approx(80)
    assert sum(on[i] * unboost[i] for i in on) == pytest.approx(80)


def test_the_cap_is_extra_fraction_plus_extra_pilots_minus_waiting():
    decisions = plan(TQS, {1: 5, 3: 100}, S, FixedPoisson())
    by_id = {d.tq.id: d for d in decisions}
    assert by_id[1].cap == int(1.2 * 10) + 4 - 5 == 11
    assert by_id[2].cap == int(1.2 * 30) + 4 == 40
    assert by_id[1].to_submit == 11 and by_id[2].to_submit == 40
    # Already over its cap (100 pilots waiting for 60 jobs): nothing.
    assert by_id[3].cap == 72 + 4 - 100 and by_id[3].to_submit == 0


def test_the_draw_is_poisson_with_the_lambda_as_mean():
    rng = random.Random(5)
    draws = [poisson(7.5, rng) for _ in range(20000)]
    mean = sum(draws) / len(draws)
    var = sum((d - mean) ** 2 for d in draws) / len(draws)
    assert mean == pytest.approx(7.5, rel=0.02) and var == pytest.approx(7.5, rel=0.05)
    big = [poisson(500.0, rng) for _ in range(2000)]
    assert sum(big) / len(big) == pytest.approx(500, rel=0.01)
    assert poisson(0, rng) == 0


def test_a_taskqueue_without_waiting_jobs_gets_no_decision():
    assert plan([TaskQueueState(9, 1.0, 0, 500)], {}, S, random.Random()) == []


@pytest.mark.parametrize(
    ("fraction", "pilot_types", "force_generic", "u", "private"),
    [
        (0.5, (), False, 0.3, True),  # generic TaskQueue: private with probability fraction
        (0.5, (), False, 0.7, False),
        (0.0, (), False, 0.0, False),
        (1.0, (), False, 0.999, True),
        (0.0, ("private",), False, 0.9, True),  # PilotTypes private: always private
        (0.0, ("Private",), False, 0.9, True),
        (1.0, ("private",), True, 0.1, False),  # ForceGeneric wins
    ],
)
def test_private_or_generic_pilot(fraction, pilot_types, force_generic, u, private):
    class R:
        def random(self):
            return u

    assert submit_private_pilot(fraction, pilot_types, force_generic, R()) is private


def test_the_private_fraction_holds_over_many_draws():
    rng = random.Random(2)
    n = sum(submit_private_pilot(0.3, (), False, rng) for _ in range(20000))
    assert n / 20000 == pytest.approx(0.3, abs=0.01)


def test_the_submit_pool_is_one_of_the_taskqueues_or_else_a_default():
    rng = random.Random(3)
    picks = Counter(choose_submit_pool(["gLite", "SAM"], ["Local"], rng) for _ in range(2000))
    assert set(picks) == {"gLite", "SAM"} and min(picks.values()) > 800
    assert choose_submit_pool([], ["Local"], rng) == "Local"
    assert choose_submit_pool([], [], rng) == ""


def test_adaptive_pilots_per_iteration_follows_waiting_over_running():
    adaptive = Settings(pilots_per_iteration=40, adaptive=True, adaptive_max_factor=5)
    assert effective_pilots_per_iteration(adaptive, 100, 100) == 40
    assert effective_pilots_per_iteration(adaptive, 1000, 100) == 200  # capped at 5x
    assert effective_pilots_per_iteration(adaptive, 10, 100) == 4
    assert effective_pilots_per_iteration(adaptive, 0, 100) == 1
    assert effective_pilots_per_iteration(S, 1000, 1) == 40  # off: the fixed number


def test_a_private_pilot_jdl_names_owner_unless_jobsharing():
    jdl = pilot_jdl(7, "/CN=alice", "lhcb_user", True, "gLite", ["ce1"], job_sharing=False)
    assert "-O /CN=alice" in jdl and "TaskQueueID = 7" in jdl and 'GlueCEUniqueID == "ce1"' in jdl
    shared = pilot_jdl(7, "/CN=erin", "lhcb_mc", True, "gLite", [], job_sharing=True)
    assert "-O" not in shared and "-G lhcb_mc" in shared


class EmptyDraws(random.Random):
    """An RNG whose Poisson draws are all 0."""

    def random(self):
        return 0.0


def test_a_taskqueue_of_an_on_demand_pool_with_no_pilot_waiting_gets_one_whatever_the_draw():
    from dataclasses import replace

    s = replace(S, on_demand_pools=("Local",))
    tqs = [
        TaskQueueState(1, priority=0.01, jobs=1, cpu_time=500, submit_pools=("Local",)),
        TaskQueueState(2, priority=0.01, jobs=1, cpu_time=500, submit_pools=("Local",)),
        TaskQueueState(3, priority=0.01, jobs=1, cpu_time=500, submit_pools=("gLite",)),
        TaskQueueState(4, priority=0.01, jobs=1, cpu_time=500, submit_pools=("Local", "gLite")),
    ]
    decisions = plan(tqs, {2: 1}, s, EmptyDraws())
    assert [d.drawn for d in decisions] == [0, 0, 0, 0]
    # 1: served on demand; 2: a pilot already waits for it; 3 and 4: not only on-demand pools.
    assert [d.to_submit for d in decisions] == [1, 0, 0, 0]
    assert [d.on_demand for d in decisions] == [True, False, False, False]
    # Without on-demand pools the seed's draw alone decides.
    assert [d.to_submit for d in plan(tqs, {2: 1}, S, EmptyDraws())] == [0, 0, 0, 0]
