"""Jobs per site and state (DIRAC's JobSummary): the jobs the user may see per (site, status), read
from the job counts the mover keeps (matcher/job_counts.py, never the job table), then the
totals, each site's efficiency finished / (finished + failed), and a link per cell into the jobs
list filtered by site and status. Jobs with no site yet (site '') are the "not placed" row."""

from __future__ import annotations

from dataclasses import dataclass, field

from matcher import job_counts
from matcher.models import JobStatus
from web.monitoring import links

NOT_PLACED = "not placed"


@dataclass
class Cell:
    count: int
    url: str


@dataclass
class SiteRow:
    site: str  # '' for the jobs not placed
    label: str
    cells: list[Cell]  # one per state of JobSummary.states, in that order
    total: Cell
    finished: int = 0
    failed: int = 0

    @property
    def efficiency(self) -> float | None:
        ended = self.finished + self.failed
        return self.finished / ended if ended else None


@dataclass
class JobSummary:
    states: list[str] = field(default_factory=list)  # those with a job, in lifecycle order
    rows: list[SiteRow] = field(default_factory=list)
    totals: list[Cell] = field(default_factory=list)
    total: Cell = field(default_factory=lambda: Cell(0, links.jobs()))
    finished: int = 0
    failed: int = 0

    @property
    def efficiency(self) -> float | None:
        ended = self.finished + self.failed
        return self.finished / ended if ended else None


def counts(user) -> dict[tuple[str, str], int]:
    """{(site, status): jobs} the user may see, from the job counts."""
    return job_counts.counts(user, ("site", "status"))


def summary(user) -> JobSummary:
    found = counts(user)
    order = [s.value for s in JobStatus]
    states = [s for s in order if any(st == s for _site, st in found)]
    sites = sorted({site for site, _st in found}, key=lambda s: (s == "", s))
    out = JobSummary(states=states)
    for site in sites:
        cells = [
            Cell(found.get((site, s), 0), links.jobs(placed=site or links.NOT_PLACED, status=s))
            for s in states
        ]
        row = SiteRow(
            site=site,
            label=site or NOT_PLACED,
            cells=cells,
            total=Cell(sum(c.count for c in cells), links.jobs(placed=site or links.NOT_PLACED)),
            finished=found.get((site, JobStatus.FINISHED), 0),
            failed=found.get((site, JobStatus.FAILED), 0),
        )
        out.rows.append(row)
    out.totals = [
        Cell(sum(found.get((site, s), 0) for site in sites), links.jobs(status=s)) for s in states
    ]
    out.total = Cell(sum(found.values()), links.jobs())
    out.finished = sum(r.finished for r in out.rows)
    out.failed = sum(r.failed for r in out.rows)
    return out
