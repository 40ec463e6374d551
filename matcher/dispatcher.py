"""Matching a pilot to one job: the DIRAC Matcher over our TaskQueues.

1. The TaskQueues the resource may take: pure rules in matching.py, evaluated against the
   process's view of the TaskQueues (taskqueue_view.py), which follows the change log and
   keeps them per resource description, by CPU segment.
2. The highest CPU segment first; in it one TaskQueue drawn by priority (MatchDrawMode), the
   next ones only if it had no job left (races.py: the same distributions as
   matching.race_order, at a cost that does not grow with every TaskQueue raced). With
   MatchCPUSegmentPrecedence off, one race among the TaskQueues of every segment.
3. Inside it, the winning UserPriority drawn from the per-priority counts, then one of the ten
   lowest JobIDs at that priority not locked by another matcher, claimed (claims.py): on
   PostgreSQL the draw and the claim are one statement.
4. A TaskQueue whose last job was claimed is dropped after the answer
   (services/housekeeping.py), and its group's priorities are recomputed after that.

Before 1, the resource as the matcher takes it (`as_matched`): its CPU time floored to the CPU
segments (a pilot asks with the time it has left, a new value every time), and, where
PayloadTags route jobs with an executable to the pilots that offer those tags, such a pilot
requires them: it takes only jobs with an executable, never the work any pilot can do (on the
demo, the local worker node's real pilots leave the simulated jobs to the simulated CEs).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, replace

from django.db import DatabaseError, transaction
from django.db.models import Sum

from core import gdpconfig
from matcher import claims, matching, races, site_mask, topology
from matcher.claims import CANDIDATE_JOBS, MatchedJob  # noqa: F401  (the matcher's vocabulary)
from matcher.models import Job, JobStatus, TaskQueuePriorityCount
from matcher.services import housekeeping
from matcher.taskqueue_view import load_definitions, view

log = logging.getLogger(__name__)

_rng = random.Random()


@dataclass
class Match:
    job: MatchedJob
    task_queue_id: int
    pilot_reference: str = ""  # the pilot the job is bound to (told back to it)


def taskqueue_definitions() -> list[matching.TQ]:
    """Every TaskQueue as the matcher sees it."""
    return view.definitions()


def invalidate_cache() -> None:
    view.invalidate()


def stats() -> dict:
    """What this process's matcher counted: full reloads of the TaskQueues, changes applied
    from the log, audits and their repairs, memo builds; the housekeeper's drops."""
    out = dict(view.stats)
    out.setdefault("taskqueue_full_reloads", 0)
    out.update({f"housekeeping_{k}": v for k, v in housekeeping.housekeeper.counts.items()})
    return out


def payload_only_tags(offered) -> frozenset[str]:
    """The PayloadTags a resource offering `offered` requires: those it offers (none when it
    offers none, or the wildcard)."""
    if matching.is_any(offered):
        return frozenset()
    return frozenset(gdpconfig.get("PayloadTags")) & frozenset(offered)


def as_matched(resource: matching.Resource) -> matching.Resource:
    """The resource as the matcher takes it (see the module's docstring)."""
    cpu = matching.cpu_time_floor(resource.cpu_time, gdpconfig.get("CPUSegments"))
    required = resource.required_tags | payload_only_tags(resource.tags)
    if cpu == resource.cpu_time and required == resource.required_tags:
        return resource
    return replace(resource, cpu_time=cpu, required_tags=required)


def matching_taskqueues(resource: matching.Resource) -> list[matching.TQ]:
    """The TaskQueues the resource may take, highest CPU segment first, by id inside one."""
    out = []
    for race in view.races_for(as_matched(resource)):
        out += [view.definition(tq_id) for tq_id in sorted(race.ids)]
    return [tq for tq in out if tq is not None]


def match_job(
    resource: matching.Resource,
    pilot_reference: str = "",
    rng: random.Random | None = None,
    mode: str | None = None,
    pilot_id: int | None = None,
) -> Match | None:
    """Give the resource one job, or None when no waiting job fits it. The job is bound to
    the pilot `pilot_id` (pilot_registry.resolve_pilot): only its credential reports on it."""
    rng = rng or _rng
    if topology.masked(resource.site, resource.grid_ce):
        return None  # DIRAC's Matcher: a pilot at a banned site or CE gets no job
    resource = as_matched(resource)
    mode = mode or gdpconfig.get("MatchDrawMode")
    by_segment = gdpconfig.get("MatchCPUSegmentPrecedence")
    exhausted: list[int] = []
    for race in view.races_for(resource, by_segment):
        for tq_id in races.order(race, rng, mode):
            claimed = claims.claim_in(tq_id, resource, pilot_reference, rng, mode, pilot_id)
            if claimed.job is not None:
                if claimed.waiting == 1:
                    _drop_quietly([tq_id])  # that was its last job
                return Match(claimed.job, tq_id, pilot_reference)
            if claimed.waiting == 0:
                exhausted.append(tq_id)
    if exhausted:
        _drop_quietly(exhausted)  # only those really empty go
    return None


def _drop_quietly(tq_ids) -> None:
    """Housekeeping after a claim: a failure here must not lose the pilot its job (the cleanup
    cycle drops empty TaskQueues anyway). In the background after the commit, the TaskQueues
    out of this process's draw meanwhile; otherwise at once (HOUSEKEEPING_IN_BACKGROUND)."""
    tq_ids = list(tq_ids)
    if housekeeping.in_background():
        transaction.on_commit(lambda: _park_and_drop(tq_ids))
        return
    try:
        housekeeping.drop_empty_taskqueues(tq_ids)
    except DatabaseError:
        log.warning("could not drop empty TaskQueues %s now", tq_ids, exc_info=True)


def _park_and_drop(tq_ids: list[int]) -> None:
    view.park(tq_ids)
    housekeeping.housekeeper.drop_later(tq_ids, done=view.dropped_or_kept)


def explain(definition: matching.TQ, resources) -> list[dict]:
    """For each (label, site, ce, Resource): does the TaskQueue match it, and if not, the first
    rule that fails (like condor_q -better-analyze)."""
    rows = []
    for site, ce, resource in resources:
        failed = matching.first_failing_rule(definition, resource)
        rows.append(
            {
                "site": site,
                "ce": ce,
                "matches": failed is None,
                "rule": failed[0] if failed else "",
                "detail": failed[1] if failed else "",
            }
        )
    return rows


def definition_of(tq_id: int) -> matching.TQ | None:
    """A TaskQueue's definition, read from the database itself when the matcher's view does
    not hold it yet (a TaskQueue made a moment ago, before the view's next refresh)."""
    view.refresh()
    found = view.definition(tq_id)
    if found is None:
        found = next(iter(load_definitions([tq_id])), None)
    return found


def active_ces():
    """The active computing elements at sites not banned (the site mask: a banned site or CE
    gets no pilot), their sites loaded, in the CEs' order (site, name)."""
    return site_mask.unmasked_ces()


def ce_resources():
    """A resource description per active computing element, as its pilots would present it
    (and the matcher take it: a CE offering PayloadTags requires them)."""
    for ce in active_ces():
        required = payload_only_tags(ce.tags)
        yield ce.site.name, ce.name, matching.ce_resource(ce, required_tags=required)


def analyse_job(job: Job) -> dict:
    """Why a job is (not) running: for a waiting job, which CEs could take its TaskQueue and,
    for the others, the first rule that fails."""
    if job.status != JobStatus.ACTIVATED:
        return {"waiting": False, "task_queue": job.task_queue_id, "status": job.status, "ces": []}
    tq = definition_of(job.task_queue_id) if job.task_queue_id else None
    if tq is None:
        return {"waiting": True, "task_queue": None, "status": job.status, "ces": []}
    rows = explain(tq, ce_resources())
    return {
        "waiting": True,
        "task_queue": tq.id,
        "status": job.status,
        "matching_ces": sum(r["matches"] for r in rows),
        "ces": rows,
    }


def taskqueue_draw_table(resource: matching.Resource, mode: str | None = None) -> list[dict]:
    """The TaskQueues a resource would take, in the matcher's order, with the probability each
    has of being drawn: within the highest CPU segment by priority; lower segments only as a
    fall-back when every job of the higher ones is taken (probability 0 here); without
    MatchCPUSegmentPrecedence, among them all by priority."""
    mode = mode or gdpconfig.get("MatchDrawMode")
    tqs = matching_taskqueues(resource)
    groups = matching.by_cpu_segment(tqs) if gdpconfig.get("MatchCPUSegmentPrecedence") else [tqs]
    waiting = dict(
        TaskQueuePriorityCount.objects.filter(task_queue_id__in=[t.id for t in tqs])
        .values_list("task_queue_id")
        .annotate(n=Sum("jobs"))
    )
    rows = []
    for rank, group in enumerate(groups):
        live = [t for t in group if waiting.get(t.id, 0) > 0]
        probs = matching.win_probabilities([t.priority for t in live], mode) if rank == 0 else []
        p_of = dict(zip([t.id for t in live], probs, strict=False))
        for tq in sorted(group, key=lambda t: (-p_of.get(t.id, 0.0), -t.priority, t.id)):
            rows.append(
                {
                    "tq": tq,
                    "waiting_jobs": waiting.get(tq.id, 0),
                    "probability": p_of.get(tq.id, 0.0),
                    "fallback": rank > 0,
                }
            )
    return rows
