"""The lazy TaskQueue race (races.py) has the distributions of the full race of race_order: the
winner, the runner-up, and so on, in both draw modes; and its UserPriority draw with given
random numbers is matching.draw_user_priority's."""

import random
from collections import Counter
from itertools import permutations

import pytest

from matcher import races
from matcher.matching import draw_user_priority, race_order

N = 30_000
PRIORITIES = [1.0, 2.0, 2.0, 5.0, 0.5, 2.0, 0.0]  # equal weights and a zero (tiny) one


def _field():
    return races.Field.of(list(range(10, 10 + len(PRIORITIES))), PRIORITIES)


def _first_two(draws):
    return Counter(tuple(order[:2]) for order in draws)


@pytest.mark.parametrize("mode", ["proportional", "dirac"])
def test_the_lazy_race_orders_taskqueues_as_the_full_race_does(mode):
    lazy_rng, full_rng = random.Random(1), random.Random(2)
    ids = _field().ids
    lazy = [list(races.order(_field(), lazy_rng, mode)) for _ in range(N)]
    full = [[ids[i] for i in race_order(PRIORITIES, full_rng, mode)] for _ in range(N)]
    for order in lazy:
        assert sorted(order) == ids  # every TaskQueue once
    a, b = _first_two(lazy), _first_two(full)
    for pair in set(a) | set(b):
        assert abs(a[pair] - b[pair]) / N < 0.012, (pair, a[pair] / N, b[pair] / N)


def test_the_lazy_proportional_race_is_drawing_without_replacement_by_priority():
    rng = random.Random(3)
    weights = [1.0, 2.0, 3.0, 4.0]
    field = races.Field.of([0, 1, 2, 3], weights)
    got = Counter(tuple(races.order(field, rng, "proportional")) for _ in range(N))
    for order in permutations(range(4)):
        p, left = 1.0, sum(weights)
        for i in order:
            p *= weights[i] / left
            left -= weights[i]
        assert abs(got[order] / N - p) < 0.01, (order, got[order] / N, p)


def test_the_lazy_race_needs_only_the_winner_when_the_winner_has_a_job():
    rng = random.Random(4)
    field = races.Field.of(list(range(5000)), [1.0 + (i % 7) for i in range(5000)])
    draws = iter(races.order(field, rng, "proportional"))
    assert 0 <= next(draws) < 5000
    dirac = iter(races.order(field, rng, "dirac"))  # seven levels, not 5000 keys
    assert 0 <= next(dirac) < 5000


@pytest.mark.parametrize("mode", ["proportional", "dirac"])
def test_the_user_priority_drawn_with_given_numbers_is_the_race_of_every_job(mode):
    counts = {1: 300, 3: 50, 8: 5, 0: 20}
    rng, reference = random.Random(5), random.Random(6)
    given = Counter(
        races.winning_user_priority(counts, [1.0 - rng.random() for _ in range(11)], mode)
        for _ in range(N)
    )
    drawn = Counter(draw_user_priority(counts, reference, mode) for _ in range(N))
    for p in counts:
        assert abs(given[p] - drawn[p]) / N < 0.012, (p, given[p] / N, drawn[p] / N)


def test_the_given_numbers_decide_the_user_priority_by_the_documented_keys():
    counts = {2: 4, 5: 1}
    u = [0.5] * 11
    # proportional: key -ln(u_p) / (n_p * p); dirac: (1 - u_p ** (1 / n_p)) / p
    u[5] = 0.99  # 0.002 against 0.087 (proportional), 0.002 against 0.080 (dirac)
    assert races.winning_user_priority(counts, u, "proportional") == 5
    assert races.winning_user_priority(counts, u, "dirac") == 5
    u[5] = 0.01  # 0.92 against 0.087; 0.198 against 0.080
    assert races.winning_user_priority(counts, u, "proportional") == 2
    assert races.winning_user_priority(counts, u, "dirac") == 2
    with pytest.raises(ValueError):
        races.winning_user_priority({}, u, "proportional")
