"""The negotiator's matchmaking, pure: job ads (grouped into autoclusters) and site ads in,
matches out. No ORM; the services feed it plain data and write the result.

The negotiator's loop (docs/developer-guide.md, Condor-G ClassAd matchmaking): jobs in fair-share
order; for each job every site ad in list order; a candidate only if both Requirements hold (true,
or a non-zero number, as HTCondor's EvalBool reads them); its Rank as a float; the first ad with the
strictly highest Rank wins. A WantAdRevaluate ad then gets CurMatches + 1 and moves to the end of
the list; any other ad is done for the cycle.

What makes it fast, as in HTCondor's own negotiator: jobs with the same significant attributes form
an autocluster and are evaluated together, once per site ad, with one combined expression per pair.
Each autocluster keeps its candidates in a heap ordered by (-Rank, list position); a site ad that
changed since (a match bumped its CurMatches and moved it) is re-evaluated only when it comes to the
top. Clauses of a site's Requirements that read only the site itself (`CurMatches < MaxMatches`) are
evaluated once per change of the site, not per pair: a full site is skipped by every autocluster at
no cost. A clause is a conjunct of the whole Requirements (split only where `&&` is the top-level
operator), so one that does not hold means the whole does not.

Like HTCondor's own match-list cache, this assumes that a site ad whose CurMatches grew is no
more willing and no more attractive than before (true of `CurMatches < MaxMatches` and of
`-CurMatches/real(MaxMatches)`); a Requirements or Rank that *grows* with CurMatches is
re-evaluated when it comes to the top, not sooner.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from classad2 import ClassAd, ExprTree, Value

from classads.ads import holds, rank_float, split_conjuncts

# A candidate site ad in an autocluster's heap: (-Rank, list position, site index, the site's
# version when ranked, whether the Rank was evaluated against it).
Candidate: TypeAlias = tuple[float, int, int, int, bool]

# Both Requirements hold, then the job's Rank with EvalFloat typing; false otherwise. `&&` reads
# a non-zero number as true, as EvalBool does, so only a true result is a match; UNDEFINED,
# ERROR and text are not. MY = job, TARGET = site. One evaluation per pair.
PAIR = ExprTree(
    "((MY.Requirements && TARGET.Requirements) =?= true)"
    " ? ((isInteger(MY.Rank) || isReal(MY.Rank) || isBoolean(MY.Rank)) ? real(MY.Rank) : 0.0)"
    " : false"
)


def own_clauses(ad: ClassAd) -> list[ExprTree]:
    """The clauses of the ad's Requirements that read nothing but the ad itself."""
    if "Requirements" not in ad:
        return []
    out = []
    for text in split_conjuncts(str(ad.lookup("Requirements"))):
        try:
            expr = ExprTree(text)
        except Exception:
            continue
        if not [r for r in ad.externalRefs(expr) if r]:
            out.append(expr)
    return out


def pair_rank(job: ClassAd, site: ClassAd) -> float | None:
    """The job's Rank of the site if the two match symmetrically, else None."""
    value = PAIR.eval(job, site)
    if isinstance(value, float) and not isinstance(value, Value):
        return value
    return None


@dataclass(eq=False)
class SiteState:
    index: int  # into the negotiator's site list
    ad: ClassAd
    want_ad_revaluate: bool
    cur_matches: int | None
    position: int = 0
    version: int = 0
    removed: bool = False
    closed: bool = False
    clauses: list[ExprTree] = field(default_factory=list)
    matches: int = 0

    def refresh(self) -> None:
        self.closed = any(not holds(c.eval(self.ad)) for c in self.clauses)


@dataclass(eq=False)
class Autocluster:
    index: int
    ad: ClassAd
    # The job's Rank when it reads nothing from the site (e.g. the default 0.0): then only the
    # first matching ad in list order is needed, not every ad's Rank.
    constant_rank: float | None = None
    dead: bool = False
    heap: list[Candidate] | None = None


@dataclass(frozen=True)
class Match:
    job: int
    autocluster: int
    site: int  # index into the site list
    rank: float
    site_version: int  # the site ad's state the match saw (its CurMatches then)


@dataclass
class Result:
    matches: list[Match]
    evaluations: int
    unmatched: int


def make_autocluster(index: int, ad: ClassAd) -> Autocluster:
    ac = Autocluster(index=index, ad=ad)
    if any(not holds(c.eval(ad)) for c in own_clauses(ad)):
        ac.dead = True  # one of its own clauses fails whatever the site
    rank = ad.lookup("Rank") if "Rank" in ad else None
    if rank is not None and not [r for r in ad.externalRefs(rank) if r]:
        ac.constant_rank = rank_float(ad.eval("Rank"))
    return ac


class Negotiator:
    def __init__(self, sites: Sequence[SiteState], autoclusters: Sequence[Autocluster]):
        self.sites = list(sites)
        self.autoclusters = list(autoclusters)
        self._positions = itertools.count()
        for s in self.sites:
            s.position = next(self._positions)
            s.refresh()
        self.open = sum(1 for s in self.sites if not s.closed and not s.removed)
        self.evaluations = 0

    def _eval(self, ac: Autocluster, site: SiteState) -> float | None:
        self.evaluations += 1
        return pair_rank(ac.ad, site.ad)

    def _build(self, ac: Autocluster) -> list[Candidate]:
        heap: list[Candidate] = []
        for s in self.sites:
            if s.removed or s.closed:
                continue
            if ac.constant_rank is not None:
                heap.append((-ac.constant_rank, s.position, s.index, s.version, False))
            else:
                rank = self._eval(ac, s)
                if rank is not None:
                    heap.append((-rank, s.position, s.index, s.version, True))
        heapq.heapify(heap)
        return heap

    def best(self, ac: Autocluster) -> tuple[SiteState, float] | None:
        """The first site ad with the highest Rank that matches the autocluster now."""
        if ac.heap is None:
            ac.heap = self._build(ac)
        heap = ac.heap
        while heap:
            neg_rank, _position, index, version, evaluated = heap[0]
            site = self.sites[index]
            if site.removed or site.closed:
                heapq.heappop(heap)
                continue
            if version != site.version or not evaluated:
                heapq.heappop(heap)
                rank = self._eval(ac, site)
                if rank is not None:
                    heapq.heappush(heap, (-rank, site.position, index, site.version, True))
                continue
            return site, -neg_rank
        return None

    def _matched(self, site: SiteState) -> None:
        site.matches += 1
        if site.want_ad_revaluate:
            site.cur_matches = (site.cur_matches or 0) + 1
            site.ad["CurMatches"] = site.cur_matches
            site.version += 1
            site.position = next(self._positions)  # to the end of the list
            was_closed = site.closed
            site.refresh()
            if site.closed and not was_closed:
                self.open -= 1
        else:
            site.removed = True
            self.open -= 1

    def run(self, jobs: Iterable[tuple[int, int]]) -> Result:
        """`jobs`: (job id, autocluster index) in fair-share order."""
        matches: list[Match] = []
        unmatched = 0
        for job, ac_index in jobs:
            ac = self.autoclusters[ac_index]
            if ac.dead or self.open <= 0:
                unmatched += 1
                continue
            found = self.best(ac)
            if found is None:
                # Sites only become fuller within a cycle: it stays unmatched (see above).
                ac.dead = True
                unmatched += 1
                continue
            site, rank = found
            matches.append(Match(job, ac_index, site.index, rank, site.version))
            self._matched(site)
        return Result(matches=matches, evaluations=self.evaluations, unmatched=unmatched)


def fair_share_order(
    queues: Iterable[tuple[int, float, Sequence[int]]], batch: int = 1
) -> list[tuple[int, int]]:
    """Interleave queues of jobs in proportion to their priorities: `queues` are (autocluster
    index, priority, job ids in the queue's own order); the k-th batch of `batch` jobs of a
    queue comes at virtual time (k + 1) / priority, earliest first (stride scheduling), so
    over any stretch of the order each queue has had its share. A batch's jobs stay together,
    as a submitter's requests do within its pie slice in HTCondor: the autocluster's cached
    candidates are then popped while fresh instead of re-evaluated after every other
    autocluster's matches."""
    keyed: list[tuple[float, int, int, int, int]] = []
    for q, (ac_index, priority, jobs) in enumerate(queues):
        step = 1.0 / max(priority, 1e-9)
        keyed.extend(((k // batch + 1) * step, q, k, job, ac_index) for k, job in enumerate(jobs))
    keyed.sort()
    return [(job, ac_index) for *_, job, ac_index in keyed]


def autocluster_key(ad: ClassAd, significant: set[str]) -> tuple[tuple[str, str], ...]:
    """What decides how the job ad evaluates against any site ad: its Requirements and Rank,
    and the text of every attribute that they or the site ads read (`significant`: names the
    site ads look up in their TARGET), chased through the attributes those name."""
    names = {n.lower() for n in ad.keys() if n.lower() in significant}
    for attr in ("Requirements", "Rank"):
        if attr in ad:
            names.update(r.lower() for r in ad.internalRefs(ad.lookup(attr)) if r)
    for name in list(names):
        if name in ad:
            names.update(r.lower() for r in ad.internalRefs(ExprTree(name)) if r)
    items = [
        (n, str(ad.lookup(n)))
        for n in sorted(names | {"requirements", "rank"})
        if n in ad  # an absent name is absent in the key too
    ]
    return tuple(items)


def significant_attributes(site_ads: Iterable[ClassAd]) -> set[str]:
    """Names the site ads' Requirements and Rank look up in the job ad (TARGET.X, or an
    unscoped name the site ad lacks)."""
    names: set[str] = set()
    for ad in site_ads:
        for attr in ("Requirements", "Rank"):
            if attr in ad:
                names.update(
                    r.rsplit(".", 1)[-1].lower() for r in ad.externalRefs(ad.lookup(attr)) if r
                )
    return names
