"""Why an entity (a group, or a user of a non-JobSharing group) is off its share: pure, no
database. web.shares.overview gathers the facts (the apps holding the work and the pilots register
their figures there) and asks `reasons` for the sentence the Shares page and the API show.

An entity is off its share (`is_off`) when its achieved share (running jobs, last hour) is
more than `GAP` (2 points) from the expected one, or more than `REL_GAP` (half) of its own share
from it while that is at least `MIN_JOBS` running jobs, or when nothing of it runs while work a
CE can serve waits: a group of 0.6 % is judged as well as one of 80 %. The main reason is the
first of these that holds (the causes beside the figures are in shares.causes):

below its share
  1. it cannot fill its share with the work it has (running + waiting jobs some active CE can
     serve < the running jobs of its share): its jobs held in brokerage, when there are more of
     them than of its unservable ones; its waiting jobs no CE can serve, when serving them would
     close the gap or they are most of its waiting jobs (named by the requirement that fails
     most: "63 % of its waiting jobs need more CPU time than any CE they may use offers"); else
     not enough waiting work;
  2. the CEs that could take its jobs have fewer slots than its share;
  3. the director's decisions for its TaskQueues were mostly stopped before a pilot left (an
     external or unknown submit pool, no credential, no CE in the list-match), named by the note;
  4. it got fewer of the pilots than its share, by at least half its gap (or none), and the CEs
     took under half the pilots the director drew for it (no free waiting slots);
  5. most of the pilots sent for it in the last hour that ran found no work or ran only the
     others' jobs;
  6. the seed's pilotsPerJob term (gdpconfig PilotsPerJobTerm on): half of each director
     cycle's pilots follow the waiting jobs, and it has fewer of them than its share, and the
     pilots it missed make at least half of its gap;
  7. the seed's CPU-segment precedence (MatchCPUSegmentPrecedence on): most of its servable
     waiting jobs are in lower CPU segments than the others', which a pilot takes first;
  8. few pilots were sent for it (under half its share of the pilots);
  9. its TaskQueues rank low by priority (the best in the lower half);
  10. its JobShare was raised within the corrector's longest slice (before 8. when within the
      achieved share's hour);
  11. its correction is at its upper clamp (the bound and the parameter named);
  12. the director's λ for its TaskQueues is under its share by at least half its gap;
above its share
  1. the others (groups, or the group's users) lack servable waiting work, so the slots they
     leave go to it;
  2. the seed's two rules (4. and 5. above) hold others below their shares, and the slots they
     miss go to it;
  3. the pilotsPerJob term: it has more of the waiting jobs, and got more pilots, than its
     share;
  4. the CPU-segment precedence: most of its servable waiting jobs are in higher CPU segments
     than most of the others';
  5. most of the pilots that ran its jobs were sent for the others' TaskQueues (a pilot takes
     what it matches by priority, whoever it was sent for);
  6. its JobShare was cut within the corrector's longest slice;
  7. its correction is at its lower clamp (the bound and the parameter named);
  8. it got more of the pilots than its share, by at least half its gap (with its part of the
     director's λ);
  9. the director's λ for its TaskQueues is over its share by at least half its gap.
Otherwise a sentence saying that none of these stands out. When another cause comes first and
its correction is at the clamp on the side that would help, the sentence says so too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from shares.causes import (
    LOWER,
    UPPER,
    Clamp,
    DirectorFacts,
    PilotShare,
    Reason,
    ShareChange,
    ces_full,
    clamp_at,
    director_blocked,
    held_in_brokerage,
    others_pilots,
    pct,
    pilots_astray,
    share_changed,
)

__all__ = ["LOWER", "UPPER", "Clamp", "DirectorFacts", "Reason", "ShareChange", "clamp_at"]

GAP = 0.02  # more than 2 points off: say why
REL_GAP = 0.5  # or more than half its own share off ...
MIN_JOBS = 0.5  # ... when that is at least half a running job
ACHIEVED_WINDOW_MIN = 60.0  # the achieved share is the last hour's average
MAJORITY = 0.5  # "most of its waiting jobs", "most of its pilots"
FEW_PILOTS = 0.5  # fewer than half its share of the pilots

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
    clamp_detail: Clamp | None = None  # the bound and the parameter of that clamp
    director: DirectorFacts = field(
        default_factory=DirectorFacts
    )  # the director's decisions, last hour
    pilots_elsewhere: int = 0  # of pilots_found_work, those that ran only others' jobs
    pilots_ran_it: int = 0  # pilots of the last hour that ran its jobs, whoever they were for
    pilots_ran_it_for_others: int = 0  # of those, the ones sent for others' TaskQueues
    held: Mapping[str, int] = field(default_factory=dict)  # brokerage state -> jobs held
    share_change: ShareChange | None = None  # a JobShare change the corrector still spans


@dataclass(frozen=True)
class Scope:
    """What the entities' shares are shares of."""

    peers: str  # "groups", "users of lhcb_user"
    running: float  # their running jobs together (last hour's average)
    pilots_sent: int  # the pilots sent for any of them in the last hour
    waiting_jobs: int = 0  # their waiting jobs together
    per_job_term: bool = False  # gdpconfig PilotsPerJobTerm: pilots follow waiting jobs too
    lam: float = 0.0  # the director's λ for all their TaskQueues, last hour
    segment_precedence: bool = False  # gdpconfig MatchCPUSegmentPrecedence


REASON_CODES = {
    "unservable": "waiting jobs no active CE can serve",
    "held": "its jobs are held in brokerage",
    "little_work": "not enough waiting work",
    "few_slots": "few slots could take its jobs",
    "director_blocked": "the director's decisions send its TaskQueues no pilots",
    "ces_full": "the CEs had no free waiting slots for its pilots",
    "pilots_no_work": "its pilots found no work",
    "pilots_elsewhere": "its pilots ran the others' jobs",
    "per_job_term": "the pilotsPerJob term follows the waiting jobs",
    "cpu_precedence": "matching takes the highest CPU segment first",
    "few_pilots": "few pilots sent for it",
    "low_rank": "its TaskQueues rank low by priority",
    "share_change": "its JobShare changed recently",
    "lambda": "the director's λ for its TaskQueues is off its share",
    "clamp": "its correction is at its clamp",
    "others_short": "the others lack servable waiting work",
    "others_held": "the seed's rules hold the others below their shares",
    "others_pilots": "pilots sent for the others ran its jobs",
    "many_pilots": "many pilots sent for it",
    "unclear": "none of the usual causes stands out",
}


def clamp_side(
    factor: float,
    slices: Mapping[str, float],
    max_global: float | None,
    max_per_slice: Mapping[str, float],
) -> str | None:
    """UPPER or LOWER when a correction cannot move further that way: its final factor at the
    instance's global clamp, or every slice at its own clamp; else None (shares.causes.clamp_at
    names the bound)."""
    found = clamp_at(factor, slices, max_global, max_per_slice)
    return found.side if found else None


def _added(dicts: Sequence[Mapping[int, int]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


_pct = pct


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


def _work(e: EntityFacts, scope: Scope) -> Reason:
    """It cannot fill its share with the work it has: held in brokerage, unservable, or too
    little."""
    want = _want(e, scope)
    unservable = e.waiting_jobs - e.servable_jobs
    held = held_in_brokerage(e.held, e.servable_jobs, e.running, want)
    if held and sum(e.held.values()) >= unservable:
        return held
    if unservable > 0 and (
        e.running + e.waiting_jobs >= want or unservable >= MAJORITY * e.waiting_jobs
    ):
        return _blocked(e)
    return Reason(
        "little_work",
        f"not enough waiting work: {e.servable_jobs} waiting jobs that a CE can serve and "
        f"{e.running:.0f} running, against about {want:.0f} running jobs for its share",
    )


def _below(e: EntityFacts, scope: Scope, others: Mapping[int, int] | None = None) -> Reason:
    want = _want(e, scope)
    if e.running + e.servable_jobs < want:
        return _work(e, scope)
    if e.slots < want:
        return Reason(
            "few_slots",
            f"the CEs that could take its jobs have {e.slots} slots, fewer than the "
            f"{want:.0f} running jobs of its share",
        )
    expected = e.expected or 0.0
    found = (
        director_blocked(e.director, e.pilots_sent)
        or ces_full(e.director, _pilot_share(e, scope, below=True))
        or pilots_astray(
            e.pilots_sent,
            e.pilots_found_work,
            e.pilots_no_work,
            e.pilots_elsewhere,
            scope.peers,
            e.rank,
            e.ranked,
        )
        or _per_job_term(e, scope, below=True)
        or _precedence(e, scope, others or {}, True)
    )
    if found:
        return found
    change = e.share_change
    if change is not None and change.minutes_ago < ACHIEVED_WINDOW_MIN:
        # Raised within the achieved share's own window: that average still lags it.
        found = share_changed(change, ACHIEVED_WINDOW_MIN, True)
        if found:
            return found
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
            f"its TaskQueues rank low by priority: the best is rank {e.rank} of {e.ranked}",
        )
    return (
        share_changed(e.share_change, ACHIEVED_WINDOW_MIN, True)
        or _clamp(e, UPPER)
        or _lambda(e, scope, below=True)
        or _unclear(e)
    )


def _pilot_share(e: EntityFacts, scope: Scope, below: bool) -> PilotShare | None:
    """Its part of the pilots sent, when it is off its share the same way as the entity and by
    at least half of its gap (or it got none); else None."""
    expected = e.expected or 0.0
    share = PilotShare(e.pilots_sent, scope.pilots_sent, expected, e.director.lam, scope.lam)
    if not scope.pilots_sent:
        return share if below and not e.pilots_sent else None
    sign = -1 if below else 1
    off = sign * (e.pilots_sent / scope.pilots_sent - expected)
    gap = abs(off_share(e) or 0.0)
    if (below and not e.pilots_sent) or (off > 0 and off >= gap / 2):
        return share
    return None


def _clamp(e: EntityFacts, side: str) -> Reason | None:
    """Its correction at the clamp on `side` (the one that would bring it to its share)."""
    if e.clamp != side or e.correction is None:
        return None
    if e.clamp_detail is not None:
        return Reason("clamp", e.clamp_detail.sentence())
    way = "raise" if side == UPPER else "lower"
    return Reason(
        "clamp",
        f"its correction is at its clamp (×{e.correction:.2f}): the corrector cannot "
        f"{way} its priority further",
    )


def _with_clamp(e: EntityFacts, reason: Reason, side: str) -> Reason:
    """The main reason, and the clamp when the correction cannot help either."""
    clamped = _clamp(e, side)
    if clamped is None or reason.code == "clamp":
        return reason
    return Reason(reason.code, f"{reason.text}; {clamped.text}")


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
    found = (
        others_pilots(
            e.pilots_ran_it,
            e.pilots_ran_it_for_others,
            e.pilots_sent / scope.pilots_sent if scope.pilots_sent else 0.0,
            e.achieved or 0.0,
            scope.peers,
            e.rank,
            e.ranked,
        )
        or share_changed(e.share_change, ACHIEVED_WINDOW_MIN, False)
        or _clamp(e, LOWER)
    )
    if found:
        return found
    expected = e.expected or 0.0
    share = _pilot_share(e, scope, below=False)
    if share is not None and scope.pilots_sent:
        text = (
            f"many pilots were sent for it: {e.pilots_sent} of {scope.pilots_sent} in the "
            f"last hour ({_pct(e.pilots_sent / scope.pilots_sent)}, against its "
            f"{_pct(expected)} share)"
        )
        if scope.lam:
            lam = e.director.lam / scope.lam
            text += (
                f": the λ of its TaskQueues (their priority, weighted up for CPU segments "
                f"shorter than maxCPU down to lowestCPUBoost) was {_pct(lam)} of the director's"
            )
        return Reason("many_pilots", text)
    return _lambda(e, scope, below=False) or _unclear(e)


def _lambda(e: EntityFacts, scope: Scope, below: bool) -> Reason | None:
    """The director aims its pilots by λ: the λ of its TaskQueues is off its share the same way
    as the entity, by at least half its gap."""
    if not scope.lam:
        return None
    expected = e.expected or 0.0
    lam = e.director.lam / scope.lam
    sign = -1 if below else 1
    off = sign * (lam - expected)
    if off <= 0 or off < abs(off_share(e) or 0.0) / 2:
        return None
    return Reason(
        "lambda",
        f"the director aims {'fewer' if below else 'more'} pilots at it than its share: the λ "
        f"of its TaskQueues was {_pct(lam)} of the director's in the last hour, against its "
        f"{_pct(expected)} share (λ: their priority, weighted up for CPU segments shorter "
        "than maxCPU down to lowestCPUBoost)",
    )


def _unclear(e: EntityFacts) -> Reason:
    return Reason(
        "unclear",
        "none of the usual causes stands out (work, brokerage, slots, the director's "
        "decisions and λ, pilots, priority, JobShare changes, correction): "
        "the achieved share is the last hour's average and may still be catching up",
    )


def off_share(e: EntityFacts) -> float | None:
    """achieved − expected when both are known, else None."""
    if e.expected is None or e.achieved is None:
        return None
    return e.achieved - e.expected


def is_off(e: EntityFacts, scope: Scope) -> bool:
    """More than GAP off its share; or, for a small share, more than REL_GAP of it off while
    that is at least MIN_JOBS running jobs; or nothing of it running while work a CE can serve
    waits."""
    gap = off_share(e)
    if gap is None or not e.expected:
        return False
    if abs(gap) > GAP:
        return True
    if gap < 0 and e.running < MIN_JOBS and e.servable_jobs > 0:
        return True
    return abs(gap) > REL_GAP * e.expected and abs(gap) * scope.running >= MIN_JOBS


def main_reason(
    e: EntityFacts,
    scope: Scope,
    others_short: float = 0.0,
    others: Mapping[int, int] | None = None,
    held: Mapping[str, tuple[str, float]] | None = None,
) -> Reason | None:
    """The main reason the entity is off its share (is_off), None when it is not (or when
    nothing ran or nothing of it waits: no share to compare). `others_short`: the running jobs
    the other entities of the scope miss for want of servable work; `others`: their servable
    waiting jobs per CPU segment, together; `held`: the others the seed's rules hold below their
    shares, {label: (reason code, running jobs short)}."""
    if not is_off(e, scope):
        return None
    if (off_share(e) or 0.0) < 0:
        return _with_clamp(e, _below(e, scope, others), UPPER)
    return _with_clamp(e, _above(e, scope, others_short, others, held), LOWER)


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
        if mine and (off_share(e) or 0.0) > 0 and is_off(e, scope):
            out[i] = main_reason(e, scope, total - short[i], others[i], mine)
    return out
