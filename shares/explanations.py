"""Why an entity (a group, or a user of a non-JobSharing group) is off its share: pure, no
database. web.shares.overview gathers the facts (the apps holding the work and the pilots register
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
  4. the seed's pilotsPerJob term (gdpconfig PilotsPerJobTerm on): half of each director
     cycle's pilots follow the waiting jobs, and it has fewer of them than its share, and the
     pilots it missed make at least half of its gap;
  5. the seed's CPU-segment precedence (MatchCPUSegmentPrecedence on): most of its servable
     waiting jobs are in lower CPU segments than the others', which a pilot takes first;
  6. few pilots were sent for it (under half its share of the pilots);
  7. its TaskQueues rank low by priority (the best in the lower half);
  8. its correction is at its upper clamp;
above its share
  1. the others (groups, or the group's users) lack servable waiting work, so the slots they
     leave go to it;
  2. the seed's two rules (4. and 5. above) hold others below their shares, and the slots they
     miss go to it;
  3. the pilotsPerJob term: it has more of the waiting jobs, and got more pilots, than its
     share;
  4. the CPU-segment precedence: most of its servable waiting jobs are in higher CPU segments
     than most of the others';
  5. its correction is at its lower clamp;
  6. it got many more pilots than its share.
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
    segments: Mapping[int, int] = field(default_factory=dict)  # CPU segment -> servable jobs


@dataclass(frozen=True)
class Scope:
    """What the entities' shares are shares of."""

    peers: str  # "groups", "users of lhcb_user"
    running: float  # their running jobs together (last hour's average)
    pilots_sent: int  # the pilots sent for any of them in the last hour
    waiting_jobs: int = 0  # their waiting jobs together
    per_job_term: bool = False  # gdpconfig PilotsPerJobTerm: pilots follow waiting jobs too
    segment_precedence: bool = False  # gdpconfig MatchCPUSegmentPrecedence


REASON_CODES = {
    "unservable": "waiting jobs no active CE can serve",
    "little_work": "not enough waiting work",
    "few_slots": "few slots could take its jobs",
    "pilots_no_work": "its pilots found no work",
    "per_job_term": "the pilotsPerJob term follows the waiting jobs",
    "cpu_precedence": "matching takes the highest CPU segment first",
    "few_pilots": "few pilots sent for it",
    "low_rank": "its TaskQueues rank low by priority",
    "clamp": "its correction is at its clamp",
    "others_short": "the others lack servable waiting work",
    "others_held": "the seed's rules hold the others below their shares",
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


def _added(dicts: Sequence[Mapping[int, int]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


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


PER_JOB_TEXT = (
    "half of each director cycle's pilots follow the waiting jobs, not the shares "
    "(PilotsPerJobTerm, the seed's pilotsPerJob term): it has {waiting} of the waiting jobs "
    "and got {pilots} of the pilots in the last hour, against its {share} share"
)
PRECEDENCE_TEXT = (
    "with MatchCPUSegmentPrecedence on, a pilot takes the highest CPU segment it can run first"
)


SEED_RULES = {
    "per_job_term": "the seed's pilotsPerJob term (PilotsPerJobTerm)",
    "cpu_precedence": "the seed's CPU-segment precedence (MatchCPUSegmentPrecedence)",
}


def _others_held(scope: Scope, held: Mapping[str, tuple[str, float]]) -> Reason:
    """The other entities the seed's rules hold below their shares: {label: (code, short)}."""
    rules = [SEED_RULES[c] for c in SEED_RULES if any(c == code for code, _ in held.values())]
    verb = "hold" if len(rules) > 1 else "holds"
    short = sum(n for _, n in held.values())
    return Reason(
        "others_held",
        f"{' and '.join(rules)} {verb} the other {scope.peers} below their shares "
        f"({', '.join(sorted(held))}: about {short:.0f} running jobs short): the slots they "
        "miss go to it",
    )


def _per_job_term(e: EntityFacts, scope: Scope, below: bool) -> Reason | None:
    """The seed's pilotsPerJob term holds it off its share: its part of the waiting jobs and
    of the pilots are both off its share the same way."""
    if not (scope.per_job_term and scope.waiting_jobs and scope.pilots_sent):
        return None
    expected = e.expected or 0.0
    waiting = e.waiting_jobs / scope.waiting_jobs
    pilots = e.pilots_sent / scope.pilots_sent
    sign = -1 if below else 1
    # The pilots it misses (or gets too many of) make at least half of its gap.
    enough = max(GAP, abs((e.achieved or 0.0) - expected) / 2)
    if sign * (waiting - expected) > GAP and sign * (pilots - expected) >= enough:
        text = PER_JOB_TEXT.format(waiting=_pct(waiting), pilots=_pct(pilots), share=_pct(expected))
        return Reason("per_job_term", text)
    return None


def _median(segments: Mapping[int, int]) -> int | None:
    """The CPU segment of the middle job."""
    total, seen = sum(segments.values()), 0
    for segment in sorted(segments):
        seen += segments[segment]
        if 2 * seen >= total > 0:
            return segment
    return None


def _precedence(
    e: EntityFacts, scope: Scope, others: Mapping[int, int], below: bool
) -> Reason | None:
    """The seed's CPU-segment precedence holds it off its share. Below: most of its servable
    waiting jobs are in lower CPU segments than the others' highest, which a pilot that can run
    both takes first. Above: most of its are in higher segments than most of the others'."""
    others = {s: n for s, n in others.items() if n > 0}
    if not (scope.segment_precedence and e.servable_jobs and others):
        return None
    if below:
        top = max(others)
        held = sum(n for s, n in e.segments.items() if s < top)
        if held and held >= MAJORITY * e.servable_jobs:
            return Reason(
                "cpu_precedence",
                f"{_pct(held / e.servable_jobs)} of its waiting jobs that a CE can serve are in "
                f"lower CPU segments than the other {scope.peers}' ({top:,} s): "
                f"{PRECEDENCE_TEXT}",
            )
        return None
    middle = _median(others) or 0
    ahead = sum(n for s, n in e.segments.items() if s > middle)
    if ahead and ahead >= MAJORITY * e.servable_jobs:
        under = sum(n for s, n in others.items() if s <= middle) / sum(others.values())
        return Reason(
            "cpu_precedence",
            f"{_pct(ahead / e.servable_jobs)} of its waiting jobs that a CE can serve are in "
            f"higher CPU segments than most of the other {scope.peers}' ({_pct(under)} of "
            f"theirs at most {middle:,} s): {PRECEDENCE_TEXT}",
        )
    return None


def _below(e: EntityFacts, scope: Scope, others: Mapping[int, int] | None = None) -> Reason:
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
    seed_rule = _per_job_term(e, scope, below=True) or _precedence(e, scope, others or {}, True)
    if seed_rule:
        return seed_rule
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


def _above(
    e: EntityFacts,
    scope: Scope,
    others_short: float,
    others: Mapping[int, int] | None = None,
    held: Mapping[str, tuple[str, float]] | None = None,
) -> Reason:
    gap = ((e.achieved or 0.0) - (e.expected or 0.0)) * scope.running
    if others_short > 0 and others_short >= MAJORITY * gap:
        return Reason(
            "others_short",
            f"the other {scope.peers} lack waiting work that a CE can serve "
            f"(about {others_short:.0f} running jobs short of their shares): "
            "the slots they leave go to it",
        )
    held = held or {}
    if held and sum(n for _, n in held.values()) >= MAJORITY * gap:
        return _others_held(scope, held)
    seed_rule = _per_job_term(e, scope, below=False) or _precedence(e, scope, others or {}, False)
    if seed_rule:
        return seed_rule
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


def main_reason(
    e: EntityFacts,
    scope: Scope,
    others_short: float = 0.0,
    others: Mapping[int, int] | None = None,
    held: Mapping[str, tuple[str, float]] | None = None,
) -> Reason | None:
    """The main reason the entity is more than GAP off its share, None when it is not (or when
    nothing ran or nothing of it waits: no share to compare). `others_short`: the running jobs
    the other entities of the scope miss for want of servable work; `others`: their servable
    waiting jobs per CPU segment, together; `held`: the others the seed's rules hold below their
    shares, {label: (reason code, running jobs short)}."""
    gap = off_share(e)
    if gap is None or abs(gap) <= GAP:
        return None
    if gap < 0:
        return _below(e, scope, others)
    return _above(e, scope, others_short, others, held)


def reasons(entities: Sequence[EntityFacts], scope: Scope) -> list[Reason | None]:
    """main_reason for each entity of one scope, in order."""
    short = [_shortfall(e, scope) if e.expected else 0.0 for e in entities]
    total = sum(short)
    everyone = _added([e.segments for e in entities])
    others = [{s: n - e.segments.get(s, 0) for s, n in everyone.items()} for e in entities]
    out = [main_reason(e, scope, total - short[i], others[i]) for i, e in enumerate(entities)]
    # Above its share, the others that the seed's rules hold below theirs come first.
    held = {
        e.label: (r.code, ((e.expected or 0.0) - (e.achieved or 0.0)) * scope.running)
        for e, r in zip(entities, out, strict=True)
        if r is not None and r.code in SEED_RULES and (off_share(e) or 0.0) < 0
    }
    for i, e in enumerate(entities):
        mine = {label: v for label, v in held.items() if label != e.label}
        if mine and (off_share(e) or 0.0) > GAP:
            out[i] = main_reason(e, scope, total - short[i], others[i], mine)
    return out
