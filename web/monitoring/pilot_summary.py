"""Pilots per site and CE (DIRAC's Pilot Summary): one GROUP BY (site, CE, status) over the
pilots the user may see, summing the jobs each ran (Pilot.jobs_done) and counting those that
ran one. Per CE and per site: pilots per state, pilots per job (pilots / the jobs they ran)
and pilot job efficiency (ended pilots that ran a job / ended pilots: Done, Failed, Aborted)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Q, Sum

from pilots.models import PILOT_FINAL_STATES, Pilot, PilotStatus
from web.monitoring import links

STATES = [s.value for s in PilotStatus]
ENDED = {s.value for s in PILOT_FINAL_STATES}
NOT_PLACED = "not placed"


@dataclass
class Cell:
    count: int
    url: str


@dataclass
class Row:
    site: str
    ce: str  # '' on a site's own row
    cells: list[Cell]  # one per STATES
    total: Cell
    jobs: int = 0  # the jobs its pilots ran
    ended: int = 0
    ended_with_job: int = 0
    ces: list[Row] = field(default_factory=list)  # a site's CEs

    @property
    def label(self) -> str:
        return self.ce or self.site or NOT_PLACED

    @property
    def pilots_per_job(self) -> float | None:
        return self.total.count / self.jobs if self.jobs else None

    @property
    def efficiency(self) -> float | None:
        return self.ended_with_job / self.ended if self.ended else None


@dataclass
class PilotSummary:
    states: list[str] = field(default_factory=lambda: list(STATES))
    sites: list[Row] = field(default_factory=list)
    total: Row | None = None


def _grouped(user) -> list[tuple[str, str, str, int, int, int]]:
    """(site, CE, status, pilots, jobs they ran, pilots that ran one): one GROUP BY."""
    return list(
        Pilot.objects.visible_to(user)
        .order_by()
        .values_list("site", "ce", "status")
        .annotate(
            n=Count("*"),
            jobs=Sum("jobs_done"),
            with_job=Count("id", filter=Q(jobs_done__gt=0)),
        )
    )


def _row(site: str, ce: str, found: dict, url_keys: dict) -> Row:
    counts = {s: sum(v[0] for (si, c, st), v in found.items() if st == s) for s in STATES}
    cells = [Cell(counts[s], links.pilots(**url_keys, status=s)) for s in STATES]
    return Row(
        site=site,
        ce=ce,
        cells=cells,
        total=Cell(sum(counts.values()), links.pilots(**url_keys)),
        jobs=sum(v[1] for v in found.values()),
        ended=sum(v[0] for (_si, _c, st), v in found.items() if st in ENDED),
        ended_with_job=sum(v[2] for (_si, _c, st), v in found.items() if st in ENDED),
    )


def summary(user) -> PilotSummary:
    found = {
        (site, ce, status): (n, jobs or 0, with_job)
        for site, ce, status, n, jobs, with_job in _grouped(user)
    }
    out = PilotSummary()
    sites = sorted({k[0] for k in found}, key=lambda s: (s == "", s))
    for site in sites:
        mine = {k: v for k, v in found.items() if k[0] == site}
        row = _row(site, "", mine, {"site": site})
        for ce in sorted({k[1] for k in mine}):
            of_ce = {k: v for k, v in mine.items() if k[1] == ce}
            row.ces.append(_row(site, ce, of_ce, {"site": site, "ce": ce}))
        out.sites.append(row)
    out.total = _row("", "", found, {})
    return out
