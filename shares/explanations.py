"""Why an entity (a group, or a user of a non-JobSharing group) is off its share: pure, no
database. shares.overview gathers the facts (the apps holding the work and the pilots register
their figures there) and asks `reasons` for the sentence the Shares page and the API show.

An entity is off its share when its achieved share (running jobs, last hour) is more than
`GAP` (2 points) from the expected one. The main reason is the first of these that holds:

below its share
  1. it cannot fill its share with the work it has (running + waiting jobs some active CE can
     serve < the running jobs of its share): its waiting jobs no CE can serve, when serving
     them would close the gap or they are most of its waiting jobs (named by the requirement
     that fails most: "63 % of its waiting jobs need more CPU time than any CE they may use
     offers"); else not enough waiting work;
  2. the CEs that could take its jobs have fewer slots than its share;
  3. most of the pilots sent for it in the last hour found no work;
  4. few pilots were sent for it (under half its share of the pilots);
  5. its TaskQueues rank low by priority (the best in the lower half);
  6. its correction is at its upper clamp;
above its share
  1. the others (groups, or the group's users) lack servable waiting work, so the slots they
     leave go to it;
  2. its correction is at its lower clamp;
  3. it got many more pilots than its share.
Otherwise a sentence saying that none of these stands out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

GAP = 0.02  # more than 2 points off: say why
MAJORITY = 0.5  # "most of its waiting jobs", "most of its pilots"
FEW_PILOTS = 0.5  # fewer than half its share of the pilots
MANY_PILOTS = 1.5  # over one and a half times its share of the pilots
CLAMP_TOLERANCE = 1e-6

UPPER, LOWER = "upper", "lower"

# What the waiting jobs a failing rule leaves without a CE need (feasibility.Shortfall.rule).
RULE_PHRASES = {
    "CPUTime": "need more CPU time than any CE they may use offers",
    "Platform": "need a platform that no CE they may use offers",
    "Tag": "need a tag that no CE they may use offers",
    "Site": "may run only at sites without an active CE",
    "GridCE": "name Grid CEs none of which is active at their sites",
    "NoCE": "cannot run: no computing element is active",
    "Together": "need a combination of requirements no single CE offers",
}


@dataclass(frozen=True)
class EntityFacts:
    """One group or user, as the Shares page shows it. Shares are fractions (0..1) of its
    scope: the groups with waiting jobs, or its group's users."""

    label: str
    expected: float | None
    achieved: float | None
    running: float = 0.0  # average running jobs, last hour
    waiting_jobs: int = 0
    servable_jobs: int = 0  # waiting jobs some active CE can serve
    blocked: Mapping[str, int] = field(default_factory=dict)  # failing rule -> waiting jobs
    slots: int = 0  # slots of the active CEs that could take some of its waiting jobs
    pilots_sent: int = 0  # pilots sent for its TaskQueues in the last hour
    pilots_found_work: int = 0  # of those, pilots that claimed a job
    pilots_no_work: int = 0  # of those, pilots that ended without finding a job
    rank: int | None = None  # its best TaskQueue's rank by priority (1: the highest)
    ranked: int = 0  # TaskQueues with waiting jobs, all entities
    correction: float | None = None
    clamp: str | None = None  # UPPER, LOWER or None: whether its correction is at a clamp


@dataclass(frozen=True)
class Scope:
    """What the entities' shares are shares of."""

    peers: str  # "groups", "users of lhcb_user"
    running: float  # their running jobs together (last hour's average)
    pilots_sent: int  # the pilots sent for any of them in the last hour


REASON_CODES = {
    "unservable": "waiting jobs no active CE can serve",
    "little_work": "not enough waiting work",
    "few_slots": "few slots could take its jobs",
    "pilots_no_work": "its pilots found no work",
    "few_pilots": "few pilots sent for it",
    "low_rank": "its TaskQueues rank low by priority",
    "clamp": "its correction is at its clamp",
    "others_short": "the others lack servable waiting work",
    "many_pilots": "many pilots sent for it",
    "unclear": "none of the usual causes stands out",
}


@dataclass(frozen=True)
class Reason:
    code: str  # one of REASON_CODES
    text: str


def clamp_side(
    factor: float,
    slices: Mapping[str, float],
    max_global: float | None,
    max_per_slice: Mapping[str, float],
) -> str | None:
    """UPPER or LOWER when a correction cannot move further that way: its final factor at the
    instance's global clamp, or every slice at its own clamp; else None."""

    def at(value: float, bound: float) -> str | None:
        if bound <= 1.0:
            return None
        if value >= bound * (1 - CLAMP_TOLERANCE):
            return UPPER
        if value <= (1.0 / bound) * (1 + CLAMP_TOLERANCE):
            return LOWER
        return None

    if max_global is not None:
        side = at(factor, max_global)
        if side:
            return side
    sides = {at(v, max_per_slice[name]) for name, v in slices.items() if name in max_per_slice}
    if len(sides) == 1 and None not in sides and len(slices) == len(max_per_slice) > 0:
        return sides.pop()
    return None


def _pct(x: float) -> str:
    return f"{x * 100:.0f} %"


def _want(e: EntityFacts, scope: Scope) -> float:
    """The running jobs its share stands for."""
    return (e.expected or 0.0) * scope.running


def _shortfall(e: EntityFacts, scope: Scope) -> float:
    """How many running jobs it misses that its servable work could not give it."""
    return max(0.0, _want(e, scope) - (e.running + e.servable_jobs))


def _blocked(e: EntityFacts) -> Reason:
    unservable = e.waiting_jobs - e.servable_jobs
    rule = max(sorted(e.blocked), key=lambda r: e.blocked[r]) if e.blocked else "Together"
    n = e.blocked.get(rule, unservable)
    phrase = RULE_PHRASES.get(rule, f"fail the {rule} rule on every active CE")
    text = f"{_pct(n / e.waiting_jobs)} of its waiting jobs {phrase}"
    if n < unservable:
        text += f" ({_pct(unservable / e.waiting_jobs)} no active CE can serve at all)"
    return Reason("unservable", text)


def _below(e: EntityFacts, scope: Scope) -> Reason:
    want = _want(e, scope)
    unservable = e.waiting_jobs - e.servable_jobs
    if e.running + e.servable_jobs < want:
        if unservable > 0 and (
            e.running + e.waiting_jobs >= want or unservable >= MAJORITY * e.waiting_jobs
        ):
            return _blocked(e)
        return Reason(
            "little_work",
            f"not enough waiting work: {e.servable_jobs} waiting jobs that a CE can serve and "
            f"{e.running:.0f} running, against about {want:.0f} running jobs for its share",
        )
    if e.slots < want:
        return Reason(
            "few_slots",
            f"the CEs that could take its jobs have {e.slots} slots, fewer than the "
            f"{want:.0f} running jobs of its share",
        )
    ended = e.pilots_found_work + e.pilots_no_work
    if e.pilots_no_work and e.pilots_no_work >= MAJORITY * ended:
        return Reason(
            "pilots_no_work",
            f"{e.pilots_no_work} of the {e.pilots_sent} pilots sent for it in the last hour "
            "found no work",
        )
    expected = e.expected or 0.0
    if scope.pilots_sent and e.pilots_sent < FEW_PILOTS * expected * scope.pilots_sent:
        return Reason(
            "few_pilots",
            f"few pilots were sent for it: {e.pilots_sent} of {scope.pilots_sent} in the last "
            f"hour ({_pct(e.pilots_sent / scope.pilots_sent)}, against its {_pct(expected)} "
            "share)",
        )
    if e.rank is not None and e.ranked and e.rank > max(1, e.ranked // 2):
        return Reason(
            "low_rank",
            f"its TaskQueues rank low by priority: the best is {e.rank} of {e.ranked}",
        )
    if e.clamp == UPPER and e.correction is not None:
        return Reason(
            "clamp",
            f"its correction is at its clamp (×{e.correction:.2f}): the corrector cannot "
            "raise its priority further",
        )
    return _unclear(e)


def _above(e: EntityFacts, scope: Scope, others_short: float) -> Reason:
    gap = ((e.achieved or 0.0) - (e.expected or 0.0)) * scope.running
    if others_short > 0 and others_short >= MAJORITY * gap:
        return Reason(
            "others_short",
            f"the other {scope.peers} lack waiting work that a CE can serve "
            f"(about {others_short:.0f} running jobs short of their shares): "
            "the slots they leave go to it",
        )
    if e.clamp == LOWER and e.correction is not None:
        return Reason(
            "clamp",
            f"its correction is at its clamp (×{e.correction:.2f}): the corrector cannot "
            "lower its priority further",
        )
    expected = e.expected or 0.0
    if scope.pilots_sent and e.pilots_sent > MANY_PILOTS * expected * scope.pilots_sent:
        return Reason(
            "many_pilots",
            f"many pilots were sent for it: {e.pilots_sent} of {scope.pilots_sent} in the "
            f"last hour ({_pct(e.pilots_sent / scope.pilots_sent)}, against its "
            f"{_pct(expected)} share)",
        )
    return _unclear(e)


def _unclear(e: EntityFacts) -> Reason:
    return Reason(
        "unclear",
        "none of the usual causes stands out (work, slots, pilots, priority, correction): "
        "the achieved share is the last hour's average and may still be catching up",
    )


def off_share(e: EntityFacts) -> float | None:
    """achieved − expected when both are known, else None."""
    if e.expected is None or e.achieved is None:
        return None
    return e.achieved - e.expected


def main_reason(e: EntityFacts, scope: Scope, others_short: float = 0.0) -> Reason | None:
    """The main reason the entity is more than GAP off its share, None when it is not (or when
    nothing ran or nothing of it waits: no share to compare). `others_short`: the running jobs
    the other entities of the scope miss for want of servable work."""
    gap = off_share(e)
    if gap is None or abs(gap) <= GAP:
        return None
    return _below(e, scope) if gap < 0 else _above(e, scope, others_short)


def reasons(entities: Sequence[EntityFacts], scope: Scope) -> list[Reason | None]:
    """main_reason for each entity of one scope, in order."""
    short = [_shortfall(e, scope) if e.expected else 0.0 for e in entities]
    total = sum(short)
    return [main_reason(e, scope, total - s) for e, s in zip(entities, short, strict=True)]
