import random
from collections import Counter

import pytest

from matcher.matching import (
    TQ,
    by_cpu_segment,
    draw_user_priority,
    race_order,
    win_probabilities,
)

N = 20_000


def _tq(i, cpu, prio):
    return TQ(i, 1, 1, False, "P", cpu, prio)


def test_only_the_highest_cpu_segment_is_drawn_first():
    tqs = [_tq(1, 500, 100.0), _tq(2, 50000, 1.0), _tq(3, 50000, 2.0), _tq(4, 5000, 50.0)]
    groups = by_cpu_segment(tqs)
    assert [[t.id for t in g] for g in groups] == [[2, 3], [4], [1]]


def test_proportional_mode_draws_each_taskqueue_in_proportion_to_its_priority():
    priorities = [1.0, 2.0, 3.0, 10.0, 0.5]
    rng = random.Random(2026)
    wins = Counter(race_order(priorities, rng, "proportional")[0] for _ in range(N))
    total = sum(priorities)
    for i, p in enumerate(priorities):
        assert abs(wins[i] / N - p / total) < 0.01, (i, wins[i] / N, p / total)


def test_dirac_mode_reproduces_the_literal_rand_over_priority_race():
    priorities = [1.0, 2.0, 3.0, 10.0, 0.5]
    rng_ours, rng_literal = random.Random(7), random.Random(8)
    ours = Counter(race_order(priorities, rng_ours, "dirac")[0] for _ in range(N))
    literal = Counter(
        min(range(len(priorities)), key=lambda i: rng_literal.random() / priorities[i])
        for _ in range(N)
    )
    exact = win_probabilities(priorities, "dirac")
    for i in range(len(priorities)):
        assert abs(ours[i] / N - literal[i] / N) < 0.015
        assert abs(ours[i] / N - exact[i]) < 0.01


def test_the_dirac_race_over_favours_high_priorities():
    # Two TaskQueues, priorities 1 and 2: proportional gives 2/3, the literal race 3/4.
    assert win_probabilities([1, 2], "proportional")[1] == pytest.approx(2 / 3)
    assert win_probabilities([1, 2], "dirac")[1] == pytest.approx(3 / 4)


@pytest.mark.parametrize("mode", ["proportional", "dirac"])
def test_the_winning_user_priority_is_drawn_as_if_every_job_raced(mode):
    counts = {1: 300, 3: 50, 8: 5}
    jobs = [p for p, n in counts.items() for _ in range(n)]
    rng_counts, rng_jobs = random.Random(11), random.Random(12)
    from_counts = Counter(draw_user_priority(counts, rng_counts, mode) for _ in range(N))
    if mode == "proportional":
        total = sum(p * n for p, n in counts.items())
        expected = {p: p * n / total for p, n in counts.items()}
    else:  # the literal race over every job: ORDER BY RAND()/UserPriority LIMIT 1
        literal = Counter(min(jobs, key=lambda p: rng_jobs.random() / p) for _ in range(N))
        expected = {p: literal[p] / N for p in counts}
    for p in counts:
        assert abs(from_counts[p] / N - expected[p]) < 0.015, (p, from_counts[p] / N, expected[p])


def test_priority_zero_jobs_almost_never_beat_a_higher_priority_and_run_when_alone():
    rng = random.Random(3)
    # weight 1e-5 each: a thousand of them weigh 0.01 against one job of priority 1.
    zeros = sum(draw_user_priority({0: 1000, 1: 1}, rng, "proportional") == 0 for _ in range(N))
    assert zeros / N < 0.02
    assert draw_user_priority({0: 5}, rng, "dirac") == 0


def test_the_draw_cost_does_not_depend_on_the_number_of_jobs():
    rng = random.Random(1)
    # A million jobs at one priority and ten at another: one key per priority, no per-job work.
    winner = draw_user_priority({1: 1_000_000, 9: 10}, rng, "proportional")
    assert winner in (1, 9)


def test_an_unknown_draw_mode_is_refused():
    with pytest.raises(ValueError):
        race_order([1.0], random.Random(), "lottery")
