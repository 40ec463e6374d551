"""DIRAC TaskQueue matching as pure decisions: which TaskQueues a resource may take, which one
to draw, which UserPriority wins inside it. No database here; services.py feeds plain data in.

Rules (docs/developer-guide.md, TaskQueues and matching): owner group and DN for private pilots,
Setup, CPU segment <= the resource's CPU time, pilot type, site accepted and not banned, Grid CE,
platform, tags (the resource must offer every tag the TaskQueue requires), and the resource's
required tags (DIRAC's RequiredTag: the TaskQueue must require every one of them). An empty list
on the TaskQueue means "no restriction"; the value "any" (any case) on the resource side is a
wildcard. A resource that names no value for a restricted field does not match it: only "any" is
a wildcard.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:

    class _SiteLike(Protocol):
        name: str

    class ComputingElementLike(Protocol):
        """What ce_resource reads of a ComputingElement (its site loaded)."""

        site: _SiteLike
        name: str
        cpu_time_limit: int
        platforms: Iterable[str]
        tags: Iterable[str]


PROPORTIONAL, DIRAC = "proportional", "dirac"
DRAW_MODES = (PROPORTIONAL, DIRAC)

# UserPriority 0 would divide by zero in the race; like DIRAC, it becomes a tiny weight, so such
# jobs run only when nothing else at a higher priority waits in the TaskQueue.
ZERO_PRIORITY_WEIGHT = 1e-5


def is_any(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "any"
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(is_any(v) for v in value)
    return False


@dataclass(frozen=True)
class Resource:
    """What a pilot presents. Lists are frozensets; None means "not given"."""

    site: str | None = None
    grid_ce: str | None = None
    setup: str | None = None
    cpu_time: int = 0
    platforms: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    pilot_type: str | None = None
    # A private pilot takes only its group's TaskQueues, and of those only its owner's unless
    # the group has JobSharing. owner_id None: no owner restriction (a generic pilot naming
    # only a group).
    owner_id: int | None = None
    owner_group_id: int | None = None
    private: bool = False
    # DIRAC's RequiredTag: the resource takes only TaskQueues that require each of these (a
    # worker node kept for one kind of work, e.g. real payloads where simulated pilots run too).
    required_tags: frozenset[str] = frozenset()


def any_resource() -> Resource:
    """A resource that takes every TaskQueue: every rule's wildcard (benchmarks, fault tests)."""
    return Resource(
        site="any",
        grid_ce="any",
        setup="any",
        cpu_time=10**7,
        platforms=frozenset({"any"}),
        tags=frozenset({"any"}),
        pilot_type="any",
    )


def cpu_time_floor(cpu_time: int, segments: Sequence[int]) -> int:
    """The resource's CPU time as the CPUTime rule sees it: down to the highest segment it
    reaches (0 below the first); above the last, as it is. A pilot that tells the time it has
    left asks with a new value each time; floored, pilots of one CE ask alike again. Never more
    TaskQueues than the exact value takes (one left from an older segmentation, between two
    segments, may be missed: it goes to a pilot with more time)."""
    if not segments or cpu_time >= segments[-1]:
        return cpu_time
    reached = [s for s in segments if s <= cpu_time]
    return reached[-1] if reached else 0


def ce_resource(
    ce: ComputingElementLike,
    private: bool | None = None,
    owner_id: int | None = None,
    owner_group_id: int | None = None,
    required_tags: Iterable[str] = (),
) -> Resource:
    """What a pilot on a computing element presents: the CE's site, name, CPU time limit,
    platforms and tags (and the tags it requires), any Setup. `private` None: any pilot (pilot
    type "any", no owner), the CE as the job analysis lists it; True: a private pilot of that
    owner and group; False: a generic pilot (the owner is then ignored). `ce` is a
    ComputingElement with its site loaded (read as plain attributes: no database here)."""
    pilot_type = "any" if private is None else "private" if private else "generic"
    return Resource(
        site=ce.site.name,
        grid_ce=ce.name,
        setup="any",
        cpu_time=ce.cpu_time_limit,
        platforms=frozenset(ce.platforms),
        tags=frozenset(ce.tags),
        pilot_type=pilot_type,
        owner_id=owner_id if private else None,
        owner_group_id=owner_group_id if private else None,
        private=bool(private),
        required_tags=frozenset(required_tags),
    )


@dataclass(frozen=True)
class TQ:
    """A TaskQueue's definition as the matcher sees it."""

    id: int
    owner_id: int
    owner_group_id: int
    job_sharing: bool
    setup: str
    cpu_time: int
    priority: float
    sites: frozenset[str] = frozenset()
    banned_sites: frozenset[str] = frozenset()
    grid_ces: frozenset[str] = frozenset()
    platforms: frozenset[str] = frozenset()
    pilot_types: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    owner_name: str = ""
    group_name: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def _listed(values: Iterable[str]) -> str:
    return "{" + ", ".join(sorted(values)) + "}"


def first_failing_rule(tq: TQ, r: Resource) -> tuple[str, str] | None:
    """(rule, explanation) for the first rule of the seed's list that rejects the resource, or
    None when the TaskQueue matches."""
    if r.private:
        if tq.owner_group_id != r.owner_group_id:
            return ("OwnerGroup", f"TaskQueue group {tq.group_name} is not the pilot's group")
        if r.owner_id is not None and not tq.job_sharing and tq.owner_id != r.owner_id:
            return ("OwnerDN", f"TaskQueue owner {tq.owner_name} is not the pilot's owner")
    if not is_any(r.setup) and tq.setup != r.setup:
        return ("Setup", f"TaskQueue Setup {tq.setup} != resource Setup {r.setup}")
    if tq.cpu_time > r.cpu_time:
        return (
            "CPUTime",
            f"TaskQueue CPU segment {tq.cpu_time} s > resource CPU time {r.cpu_time} s",
        )
    if not r.private and "private" in tq.pilot_types:
        # A generic pilot takes any TaskQueue but those that want private pilots: no wildcard
        # turns a generic pilot into a private one.
        return ("PilotType", "the TaskQueue wants private pilots; this pilot is generic")
    if tq.pilot_types and not is_any(r.pilot_type) and r.pilot_type not in tq.pilot_types:
        return (
            "PilotType",
            f"pilot type {r.pilot_type or '(none)'} not in PilotTypes {_listed(tq.pilot_types)}",
        )
    if not is_any(r.site):
        if tq.sites and r.site not in tq.sites:
            return ("Site", f"site {r.site or '(none)'} not in Sites {_listed(tq.sites)}")
        if r.site in tq.banned_sites:
            return ("BannedSite", f"site {r.site} is in BannedSites {_listed(tq.banned_sites)}")
    if tq.grid_ces and not is_any(r.grid_ce) and r.grid_ce not in tq.grid_ces:
        return ("GridCE", f"CE {r.grid_ce or '(none)'} not in GridCEs {_listed(tq.grid_ces)}")
    if tq.platforms and not is_any(r.platforms) and not (tq.platforms & r.platforms):
        return (
            "Platform",
            f"platforms {_listed(r.platforms)} offer none of {_listed(tq.platforms)}",
        )
    if tq.tags and not is_any(r.tags) and not tq.tags <= r.tags:
        return ("Tag", f"resource lacks tags {_listed(tq.tags - r.tags)}")
    if r.required_tags and not r.required_tags <= tq.tags:
        return (
            "RequiredTag",
            f"the resource takes only TaskQueues requiring {_listed(r.required_tags)}",
        )
    return None


def matching(tqs: Iterable[TQ], r: Resource) -> list[TQ]:
    return [tq for tq in tqs if first_failing_rule(tq, r) is None]


def by_cpu_segment(tqs: Sequence[TQ]) -> list[list[TQ]]:
    """Matching TaskQueues grouped by CPU segment, highest first: the seed's step 2 keeps the
    first group; later groups are the fall-back when every job of the first was taken."""
    groups: dict[int, list[TQ]] = {}
    for tq in tqs:
        groups.setdefault(tq.cpu_time, []).append(tq)
    return [groups[c] for c in sorted(groups, reverse=True)]


def weight(priority: float) -> float:
    return priority if priority > 0 else ZERO_PRIORITY_WEIGHT


def race_order(weights: Sequence[float], rng: random.Random, mode: str) -> list[int]:
    """Indices ordered by a race in which item i has weight w_i; the first is the winner.

    proportional: key -ln(U)/w (an exponential race), P(i wins) = w_i / sum(w), exactly.
    dirac: key U/w, the seed's literal ORDER BY RAND()/priority, which favours high weights.
    """
    if mode == PROPORTIONAL:
        keys = [-math.log(1.0 - rng.random()) / weight(w) for w in weights]
    elif mode == DIRAC:
        keys = [rng.random() / weight(w) for w in weights]
    else:
        raise ValueError(f"unknown draw mode {mode!r}")
    return sorted(range(len(weights)), key=keys.__getitem__)


def draw_user_priority(counts: Mapping[int, int], rng: random.Random, mode: str) -> int:
    """The winning UserPriority, exactly as if every waiting job (n_p jobs at priority p) took
    part in the race, at a cost in the number of distinct priorities only.

    proportional: the fastest of n_p exponential clocks of rate w_p is one of rate n_p*w_p.
    dirac: the smallest of n_p uniforms is 1 - V**(1/n_p), divided by w_p as the literal race.
    """
    levels = [(p, n) for p, n in counts.items() if n > 0]
    if not levels:
        raise ValueError("no waiting job to draw from")
    best, best_key = None, math.inf
    for p, n in levels:
        u = 1.0 - rng.random()  # in (0, 1]
        if mode == PROPORTIONAL:
            key = -math.log(u) / (n * weight(p))
        elif mode == DIRAC:
            key = (1.0 - u ** (1.0 / n)) / weight(p)
        else:
            raise ValueError(f"unknown draw mode {mode!r}")
        if key < best_key:
            best, best_key = p, key
    return cast(int, best)  # levels is not empty, so some level's key beat math.inf


def win_probabilities(weights: Sequence[float], mode: str) -> list[float]:
    """The probability that each item wins the race of `race_order` (for the pages)."""
    if not weights:
        return []
    ws = [weight(w) for w in weights]
    if mode == PROPORTIONAL:
        total = sum(ws)
        return [w / total for w in ws]
    if mode != DIRAC:
        raise ValueError(f"unknown draw mode {mode!r}")
    # P(i first) = integral over [0, 1/w_i] of w_i * prod_{j != i} max(0, 1 - w_j x) dx.
    # Every factor of a heavier item reaches 0 at 1/w_j, so each integral ends at 1/w_max, where
    # all factors are positive: P(i) = integral over [0, 1/w_max] of w_i F(x) / (1 - w_i x) with
    # F = prod_j (1 - w_j x). F at the quadrature nodes serves every i: O(nodes x n), not n^3.
    # F is a polynomial that can fall steeply near 0 when many items race: composite
    # Gauss-Legendre on geometrically shrinking pieces towards 0.
    end = 1.0 / max(ws)
    cuts = [0.0] + [end * 0.5**k for k in range(_PIECES - 1, -1, -1)]
    nodes, wts = _GL
    xs, cs = [], []
    for a, b in itertools.pairwise(cuts):
        half, mid = (b - a) / 2, (a + b) / 2
        for x0, c in zip(nodes, wts, strict=True):
            xs.append(mid + half * x0)
            cs.append(c * half)
    log_f = [sum(math.log1p(-w * x) for w in ws) for x in xs]
    return [
        sum(
            c * wi * math.exp(lf - math.log1p(-wi * x))
            for x, c, lf in zip(xs, cs, log_f, strict=True)
        )
        for wi in ws
    ]


def _gauss_legendre(n: int) -> tuple[list[float], list[float]]:
    nodes, weights = [], []
    for k in range(1, n + 1):
        x = math.cos(math.pi * (k - 0.25) / (n + 0.5))
        for _ in range(100):
            p0, p1 = 1.0, x
            for m in range(2, n + 1):
                p0, p1 = p1, ((2 * m - 1) * x * p1 - (m - 1) * p0) / m
            dp = n * (x * p1 - p0) / (x * x - 1)
            dx = p1 / dp
            x -= dx
            if abs(dx) < 1e-15:
                break
        nodes.append(x)
        weights.append(2 / ((1 - x * x) * dp * dp))
    return nodes, weights


_PIECES = 40
_GL = _gauss_legendre(16)
