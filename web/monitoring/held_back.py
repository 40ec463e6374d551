"""What holds the waiting jobs back (condor_q -unmatchable / -analyze, summed): for every
TaskQueue with waiting jobs and every active CE, the matcher's first failing rule
(matcher.matching.first_failing_rule) against the resource any pilot on that CE presents
(matching.ce_resource, as a job's "why is it not running" table lists it), weighted by the
TaskQueue's waiting jobs (the matcher's per-priority counts). Never per job: a TaskQueue's jobs
share its owner and group, so the TaskQueues the user may see hold exactly the waiting jobs it
may see. Three queries (four for a user, whose groups come first): the waiting jobs per
TaskQueue, one GROUP BY over the per-priority counts; the active CEs; the names and lowest job
id of the TaskQueues shown; and a fourth only for TaskQueues this process has not seen yet:
their definitions.

Nothing here reads a finished job: the cost follows the TaskQueues with waiting jobs. A
TaskQueue's requirements never change (its key is their digest), so the process keeps each
definition once read, and each distinct definition's outcome at the active CEs for as long as
those CEs present the same resources: a request then costs the per-priority counts and a dict
lookup per TaskQueue, not a load and an evaluation of every TaskQueue.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db.models import Min, OuterRef, Subquery, Sum

from matcher import dispatcher, feasibility, matching
from matcher.models import TaskQueue, TaskQueueJob, TaskQueuePriorityCount
from matcher.taskqueue_view import load_definitions

# first_failing_rule's rules, in the order it tries them; MATCHES: none fails.
RULES = (
    "OwnerGroup",
    "OwnerDN",
    "Setup",
    "CPUTime",
    "PilotType",
    "Site",
    "BannedSite",
    "GridCE",
    "Platform",
    "Tag",
)
MATCHES = "matches"
SHOWN_TASKQUEUES = 50  # TaskQueue rows on the page and in the API, the most held back first
KEPT_DEFINITIONS = 20_000  # past this many, the definitions of TaskQueues gone are forgotten


@dataclass
class Example:
    task_queue: int
    job: int  # the lowest waiting job id of that TaskQueue
    jobs: int


@dataclass
class CERow:
    site: str
    ce: str
    counts: dict[str, int] = field(default_factory=dict)  # MATCHES or a rule -> waiting jobs
    examples: dict[str, Example] = field(default_factory=dict)  # the largest TaskQueue of each
    cells: list[tuple[int, Example | None]] = field(default_factory=list)  # per outcome shown

    def add(self, outcome: str, tq: int, tq_jobs: int, jobs: int | None = None) -> None:
        """Count `jobs` (default: the TaskQueue's `tq_jobs`) under `outcome`; the TaskQueue
        becomes its example if it is the largest so far (the lower id on a tie)."""
        self.counts[outcome] = self.counts.get(outcome, 0) + (tq_jobs if jobs is None else jobs)
        best = self.examples.get(outcome)
        if best is None or (tq_jobs, -tq) > (best.jobs, -best.task_queue):
            self.examples[outcome] = Example(tq, 0, tq_jobs)


@dataclass
class TQRow:
    task_queue: int
    owner: str
    group: str
    jobs: int
    example_job: int
    matching_ces: int
    rules: dict[str, int]  # rule -> CEs at which it is the first to fail
    shortfall: str = ""  # when no active CE matches: why (matcher.feasibility), if it can say


@dataclass
class HeldBack:
    waiting: int = 0  # waiting jobs counted (in a TaskQueue that exists)
    held: int = 0  # of them, in TaskQueues no active CE matches
    held_by_rule: dict[str, int] = field(default_factory=dict)  # their most common first rule
    ces: list[CERow] = field(default_factory=list)
    taskqueues: list[TQRow] = field(default_factory=list)  # the SHOWN_TASKQUEUES most held
    taskqueue_count: int = 0
    outcomes: list[str] = field(default_factory=list)  # the columns: MATCHES, then rules seen


def _waiting_per_taskqueue(user) -> dict[int, int]:
    """{TaskQueue id: waiting jobs} of the TaskQueues the user may see: one GROUP BY over the
    per-priority counts (as many rows as TaskQueues x priorities, not as jobs)."""
    visible = TaskQueue.objects.visible_to(user).order_by().values("id")
    rows = (
        TaskQueuePriorityCount.objects.filter(task_queue__in=visible, jobs__gt=0)
        .order_by()
        .values_list("task_queue_id")
        .annotate(n=Sum("jobs"))
    )
    return dict(rows)


def _names_and_first_jobs(tq_ids: set[int]) -> dict[int, tuple[str, str, int]]:
    """{TaskQueue id: (owner, group, its lowest waiting job id)}, for the TaskQueues shown
    only (names as they are now: a definition kept by the process does not hold them). The
    lowest job is the least of one index probe per (TaskQueue, UserPriority) the per-priority
    counts list, not a read of every member of the largest TaskQueues."""
    lowest_at_priority = Subquery(
        TaskQueueJob.objects.filter(
            task_queue_id=OuterRef("task_queue_id"), user_priority=OuterRef("user_priority")
        )
        .order_by("job_id")
        .values("job_id")[:1]
    )
    lowest = Subquery(
        TaskQueuePriorityCount.objects.filter(task_queue_id=OuterRef("pk"))
        .order_by()
        .values("task_queue_id")
        .annotate(first=Min(lowest_at_priority))
        .values("first")
    )
    username = f"owner__{get_user_model().USERNAME_FIELD}"
    rows = (
        TaskQueue.objects.filter(pk__in=sorted(tq_ids))
        .order_by()
        .annotate(first=lowest)
        .values_list("pk", username, "owner_group__name", "first")
    )
    return {pk: (owner, group, first or 0) for pk, owner, group, first in rows}


@dataclass(frozen=True)
class Outcomes:
    """One definition's outcome at each active CE (MATCHES or its first failing rule), with
    how many CEs match and, per rule, at how many CEs it is the first to fail."""

    at_ces: tuple[str, ...]
    matching_ces: int
    rules: dict[str, int]

    @classmethod
    def of(cls, tq: matching.TQ, resources: tuple[matching.Resource, ...]) -> Outcomes:
        at_ces = tuple(
            (failed[0] if (failed := matching.first_failing_rule(tq, r)) else MATCHES)
            for r in resources
        )
        rules: dict[str, int] = {}
        for outcome in at_ces:
            if outcome != MATCHES:
                rules[outcome] = rules.get(outcome, 0) + 1
        return cls(at_ces, at_ces.count(MATCHES), rules)


class _Kept:
    """What the process keeps between requests: TaskQueue definitions by id, and each
    definition's Outcomes (by _signature, and by TaskQueue id) for one tuple of CE resources."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.definitions: dict[int, matching.TQ] = {}
        self.resources: tuple[matching.Resource, ...] = ()
        self.by_signature: dict[tuple, Outcomes] = {}
        self.by_id: dict[int, Outcomes] = {}

    def definitions_of(self, ids: set[int]) -> list[matching.TQ]:
        """The definitions of these TaskQueues that exist, by id; only those never read
        before are read from the database."""
        missing = ids - self.definitions.keys()
        if missing:
            loaded = load_definitions(missing)
            with self.lock:
                if len(self.definitions) + len(loaded) > KEPT_DEFINITIONS:
                    live = set(TaskQueue.objects.values_list("pk", flat=True))
                    self.definitions = {k: v for k, v in self.definitions.items() if k in live}
                    self.by_id = {k: v for k, v in self.by_id.items() if k in live}
                self.definitions.update((tq.id, tq) for tq in loaded)
        kept = self.definitions
        return [kept[i] for i in sorted(ids) if i in kept]

    def outcomes(self, tqs: list[matching.TQ], resources: tuple) -> list[Outcomes]:
        """Each TaskQueue's Outcomes at these CE resources; each distinct definition is
        evaluated once for as long as the active CEs present the same resources."""
        with self.lock:
            if resources != self.resources:
                self.resources, self.by_signature, self.by_id = resources, {}, {}
            by_signature, by_id = self.by_signature, self.by_id
        out = []
        for tq in tqs:
            found = by_id.get(tq.id)
            if found is None:
                key = _signature(tq)
                found = by_signature.get(key)
                if found is None:
                    found = by_signature[key] = Outcomes.of(tq, resources)
                by_id[tq.id] = found
            out.append(found)
        return out


_kept = _Kept()


def _signature(tq: matching.TQ) -> tuple:
    """What first_failing_rule reads of a TaskQueue for a non-private pilot."""
    return (
        tq.setup,
        tq.cpu_time,
        tq.sites,
        tq.banned_sites,
        tq.grid_ces,
        tq.platforms,
        tq.pilot_types,
        tq.tags,
    )


def summary(user) -> HeldBack:
    waiting = _waiting_per_taskqueue(user)
    out = HeldBack()
    if not waiting:
        return out
    defs = _kept.definitions_of(set(waiting))
    ces = [(ce.site.name, ce.name, matching.ce_resource(ce)) for ce in dispatcher.active_ces()]
    out.ces = [CERow(site, name) for site, name, _ in ces]
    resources = tuple(r for _s, _c, r in ces)
    # TaskQueues with the same outcome at every CE are summed once per CE: [jobs, the largest
    # TaskQueue, its jobs], in the order of their lowest TaskQueue id (the counts' key order).
    alike: dict[tuple[str, ...], list[int]] = {}
    rows: list[TQRow] = []
    for tq, found in zip(defs, _kept.outcomes(defs, resources), strict=True):
        jobs = waiting[tq.id]
        group = alike.get(found.at_ces)
        if group is None:
            alike[found.at_ces] = [jobs, tq.id, jobs]
        else:
            group[0] += jobs
            if jobs > group[2]:  # ids ascend: on a tie the lower id stays
                group[1], group[2] = tq.id, jobs
        out.waiting += jobs
        rows.append(TQRow(tq.id, "", "", jobs, 0, found.matching_ces, found.rules))
    for i, row in enumerate(out.ces):
        for at_ces, (jobs, largest, its_jobs) in alike.items():
            row.add(at_ces[i], largest, its_jobs, jobs)
    _held(out, rows, {d.id: d for d in defs}, list(resources))
    _name_example_jobs(out)
    seen = {o for row in out.ces for o in row.counts}
    out.outcomes = [o for o in (MATCHES, *RULES) if o in seen]
    for row in out.ces:
        row.cells = [(row.counts.get(o, 0), row.examples.get(o)) for o in out.outcomes]
    return out


def _held(
    out: HeldBack,
    rows: list[TQRow],
    defs: dict[int, matching.TQ],
    resources: list[matching.Resource],
) -> None:
    """The TaskQueues no active CE matches: counted by the rule that fails at most CEs, each
    with feasibility's sentence; then the rows shown, the most held back first."""
    for row in rows:
        if row.matching_ces:
            continue
        out.held += row.jobs
        rule = _most_common(row.rules)
        out.held_by_rule[rule] = out.held_by_rule.get(rule, 0) + row.jobs
    out.taskqueue_count = len(rows)
    rows.sort(key=lambda r: (r.matching_ces > 0, -r.jobs, r.task_queue))
    out.taskqueues = rows[:SHOWN_TASKQUEUES]
    for row in out.taskqueues:
        row.rules = dict(row.rules)  # its own: the Outcomes' dict is shared by alike ones
        if row.matching_ces == 0:
            row.shortfall = _shortfall(defs[row.task_queue], resources)


def _name_example_jobs(out: HeldBack) -> None:
    """Each example TaskQueue shown gets its lowest waiting job, each TaskQueue row its owner
    and group: one query for them all."""
    examples = [ex for row in out.ces for ex in row.examples.values()]
    ids = {ex.task_queue for ex in examples} | {row.task_queue for row in out.taskqueues}
    found = _names_and_first_jobs(ids) if ids else {}
    for ex in examples:
        ex.job = found.get(ex.task_queue, ("", "", 0))[2]
    for row in out.taskqueues:
        row.owner, row.group, row.example_job = found.get(row.task_queue, ("", "", 0))


def _most_common(rules: dict[str, int]) -> str:
    """The rule that fails at most CEs (the earlier rule on a tie); NoCE with no active CE."""
    if not rules:
        return "NoCE"
    return max(rules.items(), key=lambda kv: (kv[1], -RULES.index(kv[0])))[0]


def _shortfall(tq: matching.TQ, resources: list[matching.Resource]) -> str:
    """feasibility's sentence for a TaskQueue no active CE serves (its Setup, CPU time,
    sites, Grid CEs, platforms and tags; empty when only the owner or pilot type keeps it)."""
    found = feasibility.shortfalls(
        tq.setup,
        tq.cpu_time,
        {
            "sites": tq.sites,
            "banned_sites": tq.banned_sites,
            "grid_ces": tq.grid_ces,
            "platforms": tq.platforms,
            "tags": tq.tags,
        },
        resources,
    )
    return "; ".join(s.text for s in found)
