"""The TaskQueue race of matching.race_order, drawn lazily: the winner first, the next one only
when the winner had no job left, at a cost that does not grow with every TaskQueue raced.

matching.race_order gives every TaskQueue a key and sorts them all, once per match: with
thousands of small TaskQueues that is most of a match. The orders drawn here have exactly the
same distribution:

- proportional (key -ln(U)/w): the order of an exponential race is drawing without replacement
  with probability proportional to the weight (memorylessness): the winner is found by
  bisection in the cumulative weights (built once per change of the TaskQueues, not per match),
  the next ones by drawing again and rejecting those already drawn.
- dirac (key U/w, the seed's literal RAND()/priority): TaskQueues of equal weight form a level;
  in a level of n, the smallest of n uniforms is 1 - V**(1/n), and given it the others are
  uniform above it, so each level's next key follows from its last one. A heap of one key per
  level merges them; the TaskQueue of a level that comes next is any of its remaining ones,
  with equal chance. The cost is in the number of distinct priorities, like
  matching.draw_user_priority.
Pure: no database; the random numbers come from the injected `random.Random`.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from matcher.matching import DIRAC, PROPORTIONAL, race_order, weight

REJECTIONS = 16  # draws rejected in a row before the rest is raced the plain way


@dataclass
class Field:
    """The TaskQueues of one race (one CPU segment of what a resource may take) and their
    priorities, as the matcher draws from them until they change."""

    ids: list[int]
    weights: list[float]
    _cumulative: list[float] | None = field(default=None, repr=False)
    _levels: list[tuple[float, list[int]]] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, ids: Sequence[int], priorities: Sequence[float]) -> Field:
        return cls(list(ids), [weight(p) for p in priorities])

    def cumulative(self) -> list[float]:
        if self._cumulative is None:
            self._cumulative = list(itertools.accumulate(self.weights))
        return self._cumulative

    def levels(self) -> list[tuple[float, list[int]]]:
        """(weight, positions) for each distinct weight."""
        if self._levels is None:
            by_weight: dict[float, list[int]] = {}
            for i, w in enumerate(self.weights):
                by_weight.setdefault(w, []).append(i)
            self._levels = list(by_weight.items())
        return self._levels


def order(race: Field, rng: random.Random, mode: str) -> Iterator[int]:
    """The race's TaskQueue ids, winner first, drawn as they are asked for."""
    if not race.ids:
        return iter(())
    if mode == PROPORTIONAL:
        return _proportional(race, rng)
    if mode == DIRAC:
        return _dirac(race, rng)
    raise ValueError(f"unknown draw mode {mode!r}")


def _proportional(race: Field, rng: random.Random) -> Iterator[int]:
    cumulative = race.cumulative()
    n, total = len(race.ids), cumulative[-1]
    taken: set[int] = set()
    while len(taken) < n:
        for _ in range(REJECTIONS):
            i = min(bisect_right(cumulative, rng.random() * total), n - 1)
            if i not in taken:
                break
        else:
            # Most of the weight is taken: race the rest, which is the same distribution.
            rest = [j for j in range(n) if j not in taken]
            for k in race_order([race.weights[j] for j in rest], rng, PROPORTIONAL):
                yield race.ids[rest[k]]
            return
        taken.add(i)
        yield race.ids[i]


def _dirac(race: Field, rng: random.Random) -> Iterator[int]:
    levels = race.levels()
    # Per level: (key, level, value of its last order statistic in U-space, remaining count).
    heap = []
    members: list[int] | None  # a level's positions here, its undrawn members below
    for lv, (w, members) in enumerate(levels):
        u = 1.0 - (1.0 - rng.random()) ** (1.0 / len(members))
        heap.append((u / w, lv, u))
    heapq.heapify(heap)
    left: dict[int, list[int]] = {}  # a level's members not drawn yet, copied when first drawn
    while heap:
        _, lv, u = heapq.heappop(heap)
        members = left.get(lv)
        if members is None:
            members = left[lv] = list(levels[lv][1])
        k = rng.randrange(len(members))
        members[k], members[-1] = members[-1], members[k]
        yield race.ids[members.pop()]
        if members:
            # The next of the level: uniform above u, the smallest of the len(members) left.
            u += (1.0 - u) * (1.0 - (1.0 - rng.random()) ** (1.0 / len(members)))
            heapq.heappush(heap, (u / levels[lv][0], lv, u))


def winning_user_priority(counts: dict[int, int], uniforms: Sequence[float], mode: str) -> int:
    """matching.draw_user_priority with its random numbers given: uniforms[p] in (0, 1] for
    UserPriority p. The same formula as the claim statement that draws it in the database
    (matcher/claims.py), so that both give the same priority from the same numbers."""
    best, best_key = None, math.inf
    for p in sorted(counts):
        n = counts[p]
        if n <= 0:
            continue
        u = uniforms[p]
        if mode == PROPORTIONAL:
            key = -math.log(u) / (n * weight(p))
        elif mode == DIRAC:
            key = (1.0 - u ** (1.0 / n)) / weight(p)
        else:
            raise ValueError(f"unknown draw mode {mode!r}")
        if key < best_key:
            best, best_key = p, key
    if best is None:
        raise ValueError("no waiting job to draw from")
    return best
