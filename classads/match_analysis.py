"""Why does a job ad match a site ad or not? Pure: each top-level `&&` clause of the job's
Requirements (MY = job, TARGET = site) and of the site's (MY = site, TARGET = job) evaluated
on its own, and the Rank the job would give the site."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from classad2 import ClassAd, ExprTree, Value

from classads.ads import holds, rank_float, split_conjuncts
from classads.negotiation import pair_rank


class Clause(TypedDict):
    clause: str
    value: str
    passes: bool


class PairAnalysis(TypedDict):
    site_ad: str
    matches: bool
    rank: float
    job_clauses: list[Clause]
    site_clauses: list[Clause]
    job_failing: list[str]
    site_failing: list[str]
    best: NotRequired[bool]  # set by analyse


def shown(value: object) -> str:
    """A ClassAd value as the tools print it (Value first: Undefined is an int too)."""
    if isinstance(value, Value):
        return value.name.upper()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def clauses(my: ClassAd, target: ClassAd) -> list[Clause]:
    if "Requirements" not in my:
        return [{"clause": "(no Requirements)", "value": "UNDEFINED", "passes": False}]
    out: list[Clause] = []
    for text in split_conjuncts(str(my.lookup("Requirements"))):
        try:
            value = ExprTree(text).eval(my, target)
        except Exception:
            value = Value.Error
        out.append({"clause": text, "value": shown(value), "passes": holds(value)})
    return out


def analyse_pair(job: ClassAd, site_name: str, site: ClassAd) -> PairAnalysis:
    job_clauses = clauses(job, site)
    site_clauses = clauses(site, job)
    rank = rank_float(job.lookup("Rank").eval(job, site)) if "Rank" in job else 0.0
    return {
        "site_ad": site_name,
        "matches": pair_rank(job, site) is not None,
        "rank": rank,
        "job_clauses": job_clauses,
        "site_clauses": site_clauses,
        "job_failing": [c["clause"] for c in job_clauses if not c["passes"]],
        "site_failing": [c["clause"] for c in site_clauses if not c["passes"]],
    }


def analyse(job: ClassAd, sites: list[tuple[str, ClassAd]]) -> list[PairAnalysis]:
    """One row per site ad, in the negotiator's order; the best match is flagged."""
    rows = [analyse_pair(job, name, ad) for name, ad in sites]
    best = None
    for row in rows:
        if row["matches"] and (best is None or row["rank"] > best["rank"]):
            best = row
    for row in rows:
        row["best"] = row is best
    return rows
