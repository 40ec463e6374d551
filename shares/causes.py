"""The causes shares.explanations names beside the work, the slots and the pilots' numbers,
each with what an operator can act on: pure, no database (web.shares.why_sources gathers the
facts).

- the corrector at its clamp: the bound reached and the parameter that sets it;
- the director's decisions for the entity's TaskQueues: a note that stops its pilots (an
  external or unknown submit pool, no credential, nothing in the list-match), or CEs that took
  few of the pilots it drew (no free waiting slots);
- the pilots sent for it that found no work, or ran the other entities' jobs; the pilots sent
  for the others that ran its jobs;
- its jobs held in brokerage (not yet in a TaskQueue);
- a recent JobShare change that the achieved share and the correction still lag.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

CLAMP_TOLERANCE = 1e-6
UPPER, LOWER = "upper", "lower"


@dataclass(frozen=True)
class Reason:
    code: str  # one of explanations.REASON_CODES
    text: str


@dataclass(frozen=True)
class Clamp:
    """Where a correction sits at its corrector's clamp."""

    side: str  # UPPER or LOWER
    factor: float  # the correction in force
    parameter: str  # "MaxGlobalCorrectionFactor 3 of GroupsInstance"

    def sentence(self) -> str:
        way = "raise" if self.side == UPPER else "lower"
        return (
            f"its correction ×{self.factor:.2f} is at the corrector's {self.side} clamp "
            f"({self.parameter}): the corrector cannot {way} its priority further"
        )


def _at(value: float, bound: float) -> str | None:
    if bound <= 1.0:
        return None
    if value >= bound * (1 - CLAMP_TOLERANCE):
        return UPPER
    if value <= (1.0 / bound) * (1 + CLAMP_TOLERANCE):
        return LOWER
    return None


def clamp_at(
    factor: float,
    slices: Mapping[str, float],
    max_global: float | None,
    max_per_slice: Mapping[str, float],
    instance: str = "",
) -> Clamp | None:
    """The clamp a correction cannot move past: its final factor at the instance's
    MaxGlobalCorrectionFactor, or every slice at its own MaxCorrection; else None."""
    of = f" of {instance}" if instance else ""
    if max_global is not None:
        side = _at(factor, max_global)
        if side:
            return Clamp(side, factor, f"MaxGlobalCorrectionFactor {max_global:g}{of}")
    sides = {_at(v, max_per_slice[name]) for name, v in slices.items() if name in max_per_slice}
    if len(sides) == 1 and None not in sides and len(slices) == len(max_per_slice) > 0:
        side = sides.pop()
        assert side is not None
        each = ", ".join(f"{name} {max_per_slice[name]:g}" for name in sorted(slices))
        return Clamp(side, factor, f"MaxCorrection of every slice{of}: {each}")
    return None


@dataclass(frozen=True)
class DirectorFacts:
    """The director's decisions for an entity's TaskQueues in the last hour."""

    decisions: int = 0  # decisions that drew pilots for one of its TaskQueues
    drawn: int = 0  # pilots drawn (poisson(λ)) for them
    submitted: int = 0  # pilots the CEs took
    blocker: str = ""  # the note that stopped its pilots most often
    blocked: int = 0  # decisions that note (or another stopping one) cost all their pilots
    slots_full: int = 0  # decisions whose CEs took fewer pilots than were to go
    lam: float = 0.0  # the λ of all its TaskQueues' decisions, added up


@dataclass(frozen=True)
class ShareChange:
    """The entity's group's last JobShare change within the corrector's longest slice."""

    old: float
    new: float
    minutes_ago: float
    slice_name: str  # the corrector's longest slice, whose usage still spans the change
    slice_hours: float


def _n(x: float) -> str:
    return f"{x:,.0f}"


def pct(x: float) -> str:
    """A share in per cent: one decimal under 10 % (a 0.6 % share is not "1 %")."""
    return f"{x * 100:.1f} %" if 0 < x * 100 < 9.95 else f"{x * 100:.0f} %"


@dataclass(frozen=True)
class PilotShare:
    """Its part of the pilots sent and of the director's λ, against its share."""

    pilots: int
    pilots_total: int
    expected: float
    lam: float = 0.0
    lam_total: float = 0.0

    def clause(self) -> str:
        text = (
            f"{pct(self.pilots / self.pilots_total) if self.pilots_total else '0 %'} of all "
            f"the pilots sent, against its {pct(self.expected)} share"
        )
        if self.lam_total:
            text += (
                f"; the λ of its TaskQueues (their priority, weighted up for CPU segments "
                f"shorter than maxCPU down to lowestCPUBoost) was {pct(self.lam / self.lam_total)}"
                " of the director's"
            )
        return text


def director_blocked(d: DirectorFacts, pilots_sent: int) -> Reason | None:
    """Most of the director's decisions that drew pilots for it were stopped before any pilot
    left (an external or unknown pool, no credential, no CE in the list-match)."""
    if not (d.blocker and d.decisions and 2 * d.blocked >= d.decisions):
        return None
    came = f"{pilots_sent} pilots came for it" if pilots_sent else "no pilot came for it"
    return Reason(
        "director_blocked",
        f"the director sends its TaskQueues no pilots: {d.blocker} ({d.blocked} of the "
        f"{d.decisions} director decisions of the last hour that drew {_n(d.drawn)} pilots "
        f"for it; {came})",
    )


def ces_full(d: DirectorFacts, share: PilotShare | None) -> Reason | None:
    """The CEs took under half the pilots the director drew for it, for want of free waiting
    slots, while it got too few of the pilots for its share (`share`, None when not)."""
    if share is None or not (d.drawn and d.slots_full and 2 * d.submitted < d.drawn):
        return None
    if 2 * d.slots_full < d.decisions:
        return None
    return Reason(
        "ces_full",
        f"the CEs had no free waiting slots for its pilots: the director drew {_n(d.drawn)} "
        f"for its TaskQueues in the last hour and the CEs took {_n(d.submitted)} (in "
        f"{d.slots_full:,} of its {d.decisions:,} decisions), {share.clause()}: a cycle shares "
        "a CE's scarce waiting slots by the TaskQueues' λ",
    )


def pilots_astray(
    sent: int,
    found_work: int,
    no_work: int,
    elsewhere: int,
    peers: str,
    rank: int | None,
    ranked: int,
) -> Reason | None:
    """Most of the pilots sent for it that ran found no work (they ended without a job), or
    ran only the other entities' jobs: a pilot takes what it matches, by priority."""
    astray = no_work + elsewhere
    if not (astray and 2 * astray >= found_work + no_work):
        return None
    if no_work >= elsewhere:
        text = f"{no_work} of the {sent} pilots sent for it in the last hour found no work"
        if elsewhere:
            text += f" and {elsewhere} ran only jobs of the other {peers}"
        code = "pilots_no_work"
    else:
        text = (
            f"{elsewhere} of the {sent} pilots sent for it in the last hour ran only jobs of "
            f"the other {peers}"
        )
        if no_work:
            text += f" and {no_work} found no work"
        code = "pilots_elsewhere"
    if elsewhere and rank is not None and rank > 1 and ranked:
        text += (
            f": a pilot takes the TaskQueues it matches by priority, and its best ranks "
            f"{rank} of {ranked}"
        )
    return Reason(code, text)


def others_pilots(
    ran_it: int,
    for_others: int,
    sent: float,
    achieved: float,
    peers: str,
    rank: int | None,
    ranked: int,
) -> Reason | None:
    """Above its share: its own pilots (`sent`: its part of the pilots sent) fall short of its
    achieved share, and most of the pilots that ran its jobs were sent for the others'
    TaskQueues."""
    if not (for_others and 2 * for_others >= ran_it and sent < achieved):
        return None
    best = f"; its best TaskQueue ranks {rank} of {ranked}" if rank and ranked else ""
    return Reason(
        "others_pilots",
        f"{for_others} of the {ran_it} pilots that ran its jobs in the last hour were sent for "
        f"TaskQueues of the other {peers} ({pct(sent)} of the pilots were sent for its own, "
        f"against the {pct(achieved)} it ran): a pilot takes the TaskQueues it matches by "
        f"priority, whoever it was sent for{best}",
    )


BROKERAGE_STATES = ("pending", "defined", "assigned", "throttled")


def held_in_brokerage(
    held: Mapping[str, int], servable: int, running: float, want: float
) -> Reason | None:
    """Jobs of it held in brokerage (not yet in a TaskQueue) would fill what its servable work
    cannot."""
    total = sum(held.values())
    if not total:
        return None
    parts = ", ".join(f"{state} {held[state]:,}" for state in BROKERAGE_STATES if held.get(state))
    return Reason(
        "held",
        f"{_n(total)} of its jobs are held in brokerage, not yet in a TaskQueue ({parts}): "
        f"only {_n(servable)} waiting jobs that a CE can serve and {running:.0f} running, "
        f"against about {want:.0f} running jobs for its share",
    )


def share_changed(c: ShareChange | None, achieved_window_min: float, below: bool) -> Reason | None:
    """Its JobShare changed recently, the way that leaves it where it is (raised while below,
    lowered while above): the achieved share (the last hour's average) and the correction (its
    slices' usage) still count the time before."""
    if c is None or (c.new > c.old) != below:
        return None
    still = (
        "the achieved share (the last hour's average) and the correction still count "
        if c.minutes_ago < achieved_window_min
        else "the correction still counts "
    )
    return Reason(
        "share_change",
        f"its JobShare changed from {c.old:g} to {c.new:g} {c.minutes_ago:.0f} min ago: "
        f"{still}the running jobs before it ({c.slice_name} spans {c.slice_hours:g} h)",
    )
