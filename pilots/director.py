"""The DIRAC TaskQueue director's decisions, pure (docs/developer-guide.md, The TaskQueue director).

Per cycle: pilotsPerPriority = pilotsPerIteration / sum(priorities), pilotsPerJob =
pilotsPerIteration / sum(waiting jobs); per TaskQueue

    lambda = (pilotsPerPriority * P + pilotsPerJob * J) * maxCPU / max(CPU_tq, lowestCPUBoost)
    n      = min(poisson(lambda), int((1 + extraPilotFraction) * J) + extraPilots - waitingPilots)

skipped when n <= 0. maxCPU is the largest CPU segment, so short TaskQueues get a boost of up to
maxCPU / lowestCPUBoost.

With `site_director_cap` (gdpconfig SiteDirectorPilotCap, DIRAC's later SiteDirector) the cap is
J - waitingPilots, without the extra pilots, and the cycle also caps each CE's new pilots by the
waiting jobs it could run less the pilots already waiting there (services.director_cycle).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Settings:
    pilots_per_iteration: float = 40
    lowest_cpu_boost: int = 7200
    extra_pilot_fraction: float = 0.2
    extra_pilots: int = 4
    max_cpu: int = 300000
    private_pilot_fraction: float = 0.5
    adaptive: bool = False
    adaptive_max_factor: float = 5.0
    site_director_cap: bool = False  # the seed's cap unless told
    # The seed's pilotsPerJob term: half of a cycle's pilots go by waiting jobs, whatever the
    # shares. Off: they go by priority too (gdpconfig PilotsPerJobTerm).
    per_job_term: bool = True
    # Pools whose backend starts a pilot at once on this machine (a local backend): a TaskQueue
    # of only such pools with waiting jobs and no pilot waiting for it gets one whatever the
    # draw, as DIRAC's SiteDirector serves every TaskQueue with work. A small TaskQueue's draw
    # may otherwise come up empty several cycles running while its user watches.
    on_demand_pools: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskQueueState:
    id: int
    priority: float
    jobs: int
    cpu_time: int
    submit_pools: tuple[str, ...] = ()
    pilot_types: tuple[str, ...] = ()
    force_generic: bool = False


@dataclass
class Decision:
    tq: TaskQueueState
    lam: float
    drawn: int
    cap: int
    waiting_pilots: int
    to_submit: int
    submit_pool: str = ""
    private: bool = False
    notes: list[str] = field(default_factory=list)
    on_demand: bool = False  # one pilot though the draw gave none (Settings.on_demand_pools)


def poisson(lam: float, rng: random.Random) -> int:
    """A Poisson draw with an injected RNG: Knuth's product method, in chunks of at most 30
    so that exp(-lambda) never underflows (a sum of Poissons is Poisson)."""
    if lam <= 0:
        return 0
    total = 0
    while lam > 0:
        part = min(lam, 30.0)
        lam -= part
        limit, k, p = math.exp(-part), 0, 1.0
        while True:
            p *= rng.random()
            if p <= limit:
                break
            k += 1
        total += k
    return total


def effective_pilots_per_iteration(s: Settings, waiting_jobs: int, running_jobs: int) -> float:
    """pilotsPerIteration, or (the seed's proposed fix, when `adaptive`) scaled by how many jobs
    wait for each one running: as many waiting as running keeps it; more waiting sends more
    pilots (up to adaptive_max_factor times), fewer waiting sends fewer (at least 1)."""
    if not s.adaptive:
        return s.pilots_per_iteration
    ratio = waiting_jobs / max(1, running_jobs)
    return max(
        1.0, min(s.pilots_per_iteration * s.adaptive_max_factor, s.pilots_per_iteration * ratio)
    )


def cap_for(jobs: int, waiting: int, s: Settings) -> int:
    """How many more pilots a TaskQueue may have waiting: the seed's
    int((1 + extraPilotFraction) * J) + extraPilots - waitingPilots, or with the SiteDirector's
    cap J - waitingPilots (a TaskQueue of one job no longer gets five pilots)."""
    if s.site_director_cap:
        return jobs - waiting
    return int((1 + s.extra_pilot_fraction) * jobs) + s.extra_pilots - waiting


def plan(
    tqs: Sequence[TaskQueueState],
    waiting_pilots: dict[int, int],
    s: Settings,
    rng: random.Random,
    pilots_per_iteration: float | None = None,
) -> list[Decision]:
    """One decision per TaskQueue with waiting jobs, in the given order."""
    live = [tq for tq in tqs if tq.jobs > 0]
    if not live:
        return []
    ppi = s.pilots_per_iteration if pilots_per_iteration is None else pilots_per_iteration
    priority_sum = sum(tq.priority for tq in live)
    waiting_jobs = sum(tq.jobs for tq in live)
    by_priority = ppi if s.per_job_term else 2 * ppi  # the cycle sends as many either way
    per_priority = by_priority / priority_sum if priority_sum > 0 else 0.0
    per_job = ppi / waiting_jobs if s.per_job_term or priority_sum <= 0 else 0.0
    out = []
    for tq in live:
        lam = (
            (per_priority * tq.priority + per_job * tq.jobs)
            * s.max_cpu
            / max(tq.cpu_time, s.lowest_cpu_boost)
        )
        drawn = poisson(lam, rng)
        waiting = waiting_pilots.get(tq.id, 0)
        cap = cap_for(tq.jobs, waiting, s)
        d = Decision(tq, lam, drawn, cap, waiting, max(0, min(drawn, cap)))
        if not d.to_submit and not waiting and on_demand(tq, s) and cap > 0:
            d.to_submit, d.on_demand = 1, True
        out.append(d)
    return out


def on_demand(tq: TaskQueueState, s: Settings) -> bool:
    """Whether every pool the TaskQueue names starts its pilots on demand."""
    return bool(tq.submit_pools) and set(tq.submit_pools) <= set(s.on_demand_pools)


def choose_submit_pool(
    tq_pools: Sequence[str], default_pools: Sequence[str], rng: random.Random
) -> str:
    """The TaskQueue's SubmitPools, else the defaults, in random order: the first."""
    pools = list(tq_pools) or list(default_pools)
    if not pools:
        return ""
    rng.shuffle(pools)
    return pools[0]


def submit_private_pilot(
    private_fraction: float, pilot_types: Sequence[str], force_generic: bool, rng: random.Random
) -> bool:
    """Private or generic: a TaskQueue whose PilotTypes say "private" gets private pilots; any
    other a PrivatePilotFraction of them; ForceGeneric overrides both. (The seed writes
    `privatePilotFraction < random()`, which would send private pilots with probability
    1 - fraction; we follow its own definition, "fraction of private pilots", as DIRAC's
    PilotDirector does.)"""
    private_tq = any(t.lower() == "private" for t in pilot_types)
    private_if_generic_tq = rng.random() < private_fraction
    return (private_if_generic_tq or private_tq) and not force_generic


def pilot_jdl(
    tq_id: int,
    owner_dn: str,
    owner_group: str,
    private: bool,
    submit_pool: str,
    ces: Sequence[str],
    job_sharing: bool,
) -> str:
    """The pilot's JDL, as the director would hand it to the middleware."""
    args = ["-G", owner_group]
    if private and not job_sharing:
        args += ["-O", owner_dn]
    if private:
        args += ["-o", "/AgentJobRequirements/PilotType=private", "-T", str(tq_id)]
    requirements = " || ".join(f'other.GlueCEUniqueID == "{ce}"' for ce in ces) or "true"
    return "\n".join(
        [
            "[",
            '  Executable = "dirac-pilot.py";',
            f'  Arguments = "{" ".join(args)}";',
            f'  SubmitPool = "{submit_pool}";',
            f"  TaskQueueID = {tq_id};",
            f"  Requirements = {requirements};",
            "]",
        ]
    )


# What stops the director sending a TaskQueue pilots: a decision's note that starts with one of
# these (or says its pool is full). The other notes are the formula's own limits ("nothing to
# submit", "over its cap", "CEs took 3 of 5"), or say that pilots come from elsewhere.
BLOCKING_NOTES = ("unknown submit pool", "no credential", "list-match", "submission failed")
POOL_FULL = "is full (totalThreadsInPool)"


def blocker(skipped: str) -> str | None:
    """The note of a decision's `skipped` text that blocks its TaskQueue, or None."""
    for note in skipped.split("; "):
        if note.startswith(BLOCKING_NOTES) or note.endswith(POOL_FULL):
            return note
    return None
