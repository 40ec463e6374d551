"""Which of a job's requirements no active computing element offers.

A job that can never run is accepted, as DIRAC accepts it (a CE may come back, staff may add a
tag), but its submitter is told at once: the submission answers `warnings` and the job page
shows them. Pure: the CEs come in as the resource descriptions their pilots would present
(`match.ce_resources`), the rules are the matcher's own (`matching.first_failing_rule`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from matcher import matching

DIRECTOR_PILOT_TYPES = frozenset({"private", "generic"})


@dataclass(frozen=True)
class Context:
    """What the checks compare a job with: the active CEs and the live parameters."""

    ces: Sequence[matching.Resource]
    submit_pools: frozenset[str]  # pools the director knows and has a backend for
    default_setup: str
    external_pools: frozenset[str] = frozenset()  # their pilots come from outside the director


def _listed(values: Iterable[str]) -> str:
    return ", ".join(sorted(values))


def _tq(setup: str, segment: int, req: Mapping[str, Sequence[str]]) -> matching.TQ:
    return matching.TQ(
        id=0,
        owner_id=0,
        owner_group_id=0,
        job_sharing=False,
        setup=setup,
        cpu_time=segment,
        priority=0.0,
        **{  # type: ignore[arg-type]  # the five frozenset fields, by name
            f: frozenset(req.get(f, ()))
            for f in ("sites", "banned_sites", "grid_ces", "platforms", "tags")
        },
    )


def can_run(
    setup: str, segment: int, req: Mapping[str, Sequence[str]], ces: Sequence[matching.Resource]
) -> bool:
    """Whether the pilots of some active CE could take a TaskQueue of these requirements."""
    return bool(serving(setup, segment, req, ces))


def serving(
    setup: str, segment: int, req: Mapping[str, Sequence[str]], ces: Sequence[matching.Resource]
) -> list[matching.Resource]:
    """The active CEs whose pilots could take a TaskQueue of these requirements."""
    tq = _tq(setup, segment, req)
    return [ce for ce in ces if matching.first_failing_rule(tq, ce) is None]


def warnings(
    setup: str, cpu_time: int, segment: int, req: Mapping[str, Sequence[str]], ctx: Context
) -> list[str]:
    """Plain sentences, one per requirement no active CE offers (or that defeats itself)."""
    out = _self_defeating(setup, req, ctx)
    tq = _tq(setup, segment, req)
    able = [ce for ce in ctx.ces if matching.first_failing_rule(tq, ce) is None]
    if not able:
        out += _unoffered(tq, cpu_time, ctx.ces) or [
            "no single active CE offers all its requirements together "
            "(see why it is not running on its page)"
        ]
    elif cpu_time > max(ce.cpu_time for ce in able):
        # Above the last CPU segment the matcher lets the largest CEs take it, whose pilots
        # then run out of time.
        out.append(_over_limit(cpu_time, segment, max(ce.cpu_time for ce in able)))
    return out


def _over_limit(cpu_time: int, segment: int, top: int) -> str:
    seg = f" (CPU segment {segment} s)" if segment != cpu_time else ""
    return (
        f"CPU time {cpu_time} s{seg} is over every active CE's CPU time limit "
        f"(the largest is {top} s)"
    )


def _self_defeating(setup: str, req: Mapping[str, Sequence[str]], ctx: Context) -> list[str]:
    out = []
    both = set(req.get("sites", ())) & set(req.get("banned_sites", ()))
    if both:
        out.append(f"site {_listed(both)} is both in Sites and in BannedSites: it never runs there")
    unknown_pools = set(req.get("submit_pools", ())) - ctx.submit_pools
    if unknown_pools:
        out.append(
            f"SubmitPools {_listed(unknown_pools)}: no such submit pool "
            f"(known: {_listed(ctx.submit_pools)}), the director sends it no pilot"
        )
    pools = set(req.get("submit_pools", ()))
    if pools and pools <= ctx.external_pools:
        out.append(
            f"SubmitPools {_listed(pools)}: the director sends no pilot through it; only a "
            "pilot started by hand (or by another director) takes it"
        )
    types = set(req.get("pilot_types", ()))
    if types and not types & DIRECTOR_PILOT_TYPES:
        out.append(
            f"PilotTypes {_listed(types)}: the director's pilots are private or generic, "
            "so only a pilot started by hand with that type takes it"
        )
    if setup != ctx.default_setup:
        out.append(
            f"Setup {setup} is not this grid's Setup ({ctx.default_setup}, the DefaultSetup "
            "parameter): pilots presenting the grid's Setup do not take it"
        )
    return out


def _narrowed(
    tq: matching.TQ, ces: Sequence[matching.Resource]
) -> tuple[list[matching.Resource], Shortfall | None]:
    """The active CEs at the TaskQueue's allowed sites and Grid CEs, or why there are none
    (a platform offered only at a banned site is not offered)."""
    if not ces:
        return [], Shortfall("NoCE", "no computing element is active")
    allowed = [c for c in ces if c.site not in tq.banned_sites]
    if tq.sites:
        allowed = [c for c in allowed if c.site in tq.sites]
    if not allowed:
        where = f"Sites {_listed(tq.sites)}" if tq.sites else "any site"
        ban = f" (BannedSites {_listed(tq.banned_sites)})" if tq.banned_sites else ""
        return [], Shortfall("Site", f"no active CE at {where}{ban}")
    if tq.grid_ces:
        allowed = [c for c in allowed if c.grid_ce in tq.grid_ces]
        if not allowed:
            return [], Shortfall(
                "GridCE",
                f"GridCEs {_listed(tq.grid_ces)}: none is an active CE at its allowed sites",
            )
    return allowed, None


def _unoffered(tq: matching.TQ, cpu_time: int, ces: Sequence[matching.Resource]) -> list[str]:
    """Each requirement that no active CE offers, the CEs narrowed by site and Grid CE first."""
    allowed, none = _narrowed(tq, ces)
    if none is not None:
        return [none.text]
    out = []
    top = max(c.cpu_time for c in allowed)
    if max(tq.cpu_time, cpu_time) > top:
        out.append(_over_limit(cpu_time, tq.cpu_time, top))
    out += [s.text for s in _offers(tq, allowed)]
    return out


def _offers(tq: matching.TQ, allowed: Sequence[matching.Resource]) -> list[Shortfall]:
    """The platforms and tags none of the allowed CEs offers."""
    out = []
    if tq.platforms and not any(tq.platforms & c.platforms for c in allowed):
        offered = set().union(*(c.platforms for c in allowed))
        out.append(
            Shortfall(
                "Platform",
                f"no active CE offers platform {_listed(tq.platforms)} "
                f"(offered: {_listed(offered) or 'none'})",
            )
        )
    missing = [t for t in sorted(tq.tags) if not any(t in c.tags for c in allowed)]
    for tag in missing:
        out.append(Shortfall("Tag", f"no active CE offers tag {tag}"))
    if tq.tags and not missing and not any(tq.tags <= c.tags for c in allowed):
        out.append(Shortfall("Tag", f"no active CE offers tags {_listed(tq.tags)} together"))
    return out


@dataclass(frozen=True)
class Shortfall:
    """Why no active CE can serve a TaskQueue: the matcher's rule that fails (NoCE, Site,
    GridCE, CPUTime, Platform, Tag; Together when each requirement is offered somewhere but
    no single CE offers them all) and a sentence naming the CE limits it exceeds."""

    rule: str
    text: str


SHOWN_CES = 3  # CEs named beside the largest CPU time limit


def shortfalls(
    setup: str, segment: int, req: Mapping[str, Sequence[str]], ces: Sequence[matching.Resource]
) -> list[Shortfall]:
    """Empty when some active CE can serve a TaskQueue of these requirements (`serving`);
    else each requirement no CE it may use offers, the first being the matcher's first
    failing rule, e.g. "needs 300,000 s of CPU time; the largest CE limit is 172,800 s
    (ce503.cern.ch) at its sites"."""
    if serving(setup, segment, req, ces):
        return []
    tq = _tq(setup, segment, req)
    allowed, none = _narrowed(tq, ces)
    if none is not None:
        return [none]
    out = []
    top = max(c.cpu_time for c in allowed)
    if tq.cpu_time > top:
        names = sorted(str(c.grid_ce) for c in allowed if c.cpu_time == top)
        shown = ", ".join(names[:SHOWN_CES]) + (" …" if len(names) > SHOWN_CES else "")
        where = " at its sites" if len(allowed) < len(ces) else ""
        out.append(
            Shortfall(
                "CPUTime",
                f"needs {tq.cpu_time:,} s of CPU time; the largest CE limit{where} is "
                f"{top:,} s ({shown})",
            )
        )
    out += _offers(tq, allowed)
    return out or [
        Shortfall(
            "Together", "no single active CE offers all its requirements together (each is offered)"
        )
    ]
