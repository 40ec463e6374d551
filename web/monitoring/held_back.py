"""What holds the waiting jobs back (condor_q -unmatchable / -analyze, summed): for every
TaskQueue with waiting jobs and every active CE, the matcher's first failing rule
(matcher.matching.first_failing_rule) against the resource any pilot on that CE presents
(matching.ce_resource, as a job's "why is it not running" table lists it), weighted by the
TaskQueue's waiting jobs (the matcher's per-priority counts). Never per job: a TaskQueue's jobs
share its owner and group, so the TaskQueues the user may see hold exactly the waiting jobs it
may see. Four queries (five for a user, whose groups come first): the waiting jobs per
TaskQueue, one GROUP BY over the per-priority counts; the TaskQueue definitions; the active
CEs; the lowest job id of the TaskQueues shown. Then TaskQueues x CEs in memory, each distinct
definition evaluated once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Min, Sum

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

    def add(self, outcome: str, tq: int, jobs: int) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + jobs
        best = self.examples.get(outcome)
        if best is None or (jobs, -tq) > (best.jobs, -best.task_queue):
            self.examples[outcome] = Example(tq, 0, jobs)


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


def _first_jobs(tq_ids: set[int]) -> dict[int, int]:
    """{TaskQueue id: its lowest waiting job id}, for the TaskQueues shown only."""
    rows = (
        TaskQueueJob.objects.filter(task_queue_id__in=sorted(tq_ids))
        .order_by()
        .values_list("task_queue_id")
        .annotate(first=Min("job_id"))
    )
    return dict(rows)


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
    defs = [d for d in load_definitions(None) if d.id in waiting]
    ces = [(ce.site.name, ce.name, matching.ce_resource(ce)) for ce in dispatcher.active_ces()]
    out.ces = [CERow(site, name) for site, name, _ in ces]
    memo: dict[tuple, list[str]] = {}
    rows: list[TQRow] = []
    for tq in defs:
        jobs = waiting[tq.id]
        key = _signature(tq)
        if key not in memo:
            memo[key] = [
                (failed[0] if (failed := matching.first_failing_rule(tq, r)) else MATCHES)
                for _site, _ce, r in ces
            ]
        outcomes = memo[key]
        rules: dict[str, int] = {}
        for row, outcome in zip(out.ces, outcomes, strict=True):
            row.add(outcome, tq.id, jobs)
            if outcome != MATCHES:
                rules[outcome] = rules.get(outcome, 0) + 1
        matched = outcomes.count(MATCHES)
        out.waiting += jobs
        rows.append(TQRow(tq.id, tq.owner_name, tq.group_name, jobs, 0, matched, rules))
    _held(out, rows, {d.id: d for d in defs}, [r for _s, _c, r in ces])
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
        if row.matching_ces == 0:
            row.shortfall = _shortfall(defs[row.task_queue], resources)


def _name_example_jobs(out: HeldBack) -> None:
    """Each example TaskQueue shown gets its lowest waiting job: one query for them all."""
    examples = [ex for row in out.ces for ex in row.examples.values()]
    ids = {ex.task_queue for ex in examples} | {row.task_queue for row in out.taskqueues}
    first = _first_jobs(ids) if ids else {}
    for ex in examples:
        ex.job = first.get(ex.task_queue, 0)
    for row in out.taskqueues:
        row.example_job = first.get(row.task_queue, 0)


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
