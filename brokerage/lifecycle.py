"""A task's life after brokerage, as JEDI leads it: retries of its jobs and its final state.

- **Final state** (JEDI's PostProcessor): a task whose jobs have all reached a final state ends
  `done` when every job finished, `finished` when some finished and the others did not (failed,
  cancelled or closed), `failed` when none finished. The `task_completion` cycle (every minute)
  finds them set-based: one query for the open tasks none of whose jobs is still open, one
  grouped count over those tasks' jobs, one UPDATE per final state.
- **Reassignment** (PanDA's kill code 51, "reassigned by JEDI"): the defined timeout closes a
  task's job that waited 4 hours for brokerage, and its work is retried as a new job
  (attempt + 1) that goes through job brokerage again; after TASK_MAX_ATTEMPT attempts the
  work is given up. A retried attempt (`TaskJob.reassigned`) no longer counts for its task.

`outcome` and `Progress` are pure; the rest reads and writes the database.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Case, Count, Exists, OuterRef, Value, When

from brokerage.models import Task, TaskJob, TaskStatus
from brokerage.services import submission
from core import clock
from core.cycles import cycle
from matcher import services as job_services
from matcher.lifecycle import LIVE_STATES
from matcher.models import FINAL_STATES, MULTI_VALUED_FIELDS, PAYLOAD_FIELDS, JobStatus
from shares.models import User

OPEN_TASK_STATES = (
    TaskStatus.ASSIGNING,
    TaskStatus.READY,
    TaskStatus.PENDING,
    TaskStatus.THROTTLED,
    TaskStatus.RUNNING,
)
FINAL_TASK_STATES = (TaskStatus.DONE, TaskStatus.FINISHED, TaskStatus.FAILED)
# A retry asks for what its job asked for, but the sites: brokerage places it again.
REQUIREMENTS = tuple(f for f in MULTI_VALUED_FIELDS if f != "sites")


# --- pure ---------------------------------------------------------------------------------------


def outcome(counts: Mapping[str, int]) -> str | None:
    """The final state of a task from its current jobs by state; None while any is open."""
    total = sum(counts.values())
    if total == 0 or any(n and s not in FINAL_STATES for s, n in counts.items()):
        return None
    finished = counts.get(JobStatus.FINISHED, 0)
    if finished == total:
        return TaskStatus.DONE
    return TaskStatus.FINISHED if finished else TaskStatus.FAILED


def outcome_reason(counts: Mapping[str, int]) -> str:
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda i: -i[1]) if n)
    return f"every job ended: {parts}"


@dataclass(frozen=True)
class Progress:
    """A task's current jobs (retried attempts left out) for its progress bar."""

    total: int
    finished: int
    unsuccessful: int  # failed, cancelled or closed

    @classmethod
    def of(cls, counts: Mapping[str, int]) -> Progress:
        finished = counts.get(JobStatus.FINISHED, 0)
        ended = sum(n for s, n in counts.items() if s in FINAL_STATES)
        return cls(sum(counts.values()), finished, ended - finished)

    @property
    def ended(self) -> int:
        return self.finished + self.unsuccessful

    def pct(self, n: int) -> float:
        return round(100.0 * n / self.total, 1) if self.total else 0.0

    @property
    def finished_pct(self) -> float:
        return self.pct(self.finished)

    @property
    def unsuccessful_pct(self) -> float:
        return self.pct(self.unsuccessful)


# --- job counts ---------------------------------------------------------------------------------


@dataclass
class TaskJobCounts:
    """Every job of a task by state (what /jobs/?task=N&status=S lists), and its progress."""

    by_status: dict[str, int]
    progress: Progress
    reassigned: int


def job_counts(task_ids) -> dict[int, TaskJobCounts]:
    """Per task: its jobs by state, its progress, its retried attempts (one grouped query)."""
    every: dict[int, Counter] = defaultdict(Counter)
    current: dict[int, Counter] = defaultdict(Counter)
    reassigned: Counter = Counter()
    rows = (
        TaskJob.objects.filter(task_id__in=list(task_ids))
        .values_list("task_id", "job__status", "reassigned")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for task_id, status, retried, n in rows:
        every[task_id][status] += n
        if retried:
            reassigned[task_id] += n
        else:
            current[task_id][status] += n
    order = {s: i for i, s in enumerate(JobStatus.values)}
    return {
        t: TaskJobCounts(
            dict(sorted(every[t].items(), key=lambda i: order.get(i[0], 99))),
            Progress.of(current[t]),
            reassigned[t],
        )
        for t in every
    }


# --- the final state ----------------------------------------------------------------------------


def _current_jobs():
    return TaskJob.objects.filter(task_id=OuterRef("pk"), reassigned=False)


# The open states named (not "not final"): the subquery then reads the jobs table through its
# status index instead of scanning every ended job of the grid's history.
OPEN_JOB_STATES = LIVE_STATES


def _open_jobs():
    return _current_jobs().filter(job__status__in=OPEN_JOB_STATES)


CHUNK = 1000  # tasks per grouped count and UPDATE: bounded statements on the first run too


@cycle("task_completion")
def task_completion(run_id=None) -> dict:
    """Give every open task whose jobs have all ended its final state."""
    ended = (
        Task.objects.filter(status__in=OPEN_TASK_STATES)
        .filter(Exists(_current_jobs()))
        .exclude(Exists(_open_jobs()))
        .order_by("pk")
    )
    ids = list(ended.values_list("pk", flat=True))
    done: Counter = Counter()
    for start in range(0, len(ids), CHUNK):
        done.update(finish_tasks(ids[start : start + CHUNK]))
    return {"tasks": sum(done.values()), **{str(s): n for s, n in sorted(done.items())}}


def finish_tasks(ids: list[int]) -> Counter:
    """Give each of these tasks whose jobs have all ended its final state (by state: how many)."""
    counts: dict[int, Counter] = defaultdict(Counter)
    for task_id, status, n in (
        TaskJob.objects.filter(task_id__in=ids, reassigned=False)
        .values_list("task_id", "job__status")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        counts[task_id][status] += n
    by_state: dict[str, list[int]] = defaultdict(list)
    for task_id in ids:
        state = outcome(counts[task_id])
        if state is not None:
            by_state[state].append(task_id)
    now = clock.now()
    done: Counter = Counter()
    with transaction.atomic():
        for state, task_ids in by_state.items():
            reasons = [When(pk=t, then=Value(outcome_reason(counts[t])[:255])) for t in task_ids]
            # Checked again in the UPDATE: a job rescheduled meanwhile keeps its task open.
            done[state] = (
                Task.objects.filter(pk__in=task_ids, status__in=OPEN_TASK_STATES)
                .exclude(Exists(_open_jobs()))
                .update(
                    status=state,
                    status_reason=Case(*reasons, default=Value("every job ended")),
                    retry_after=None,
                    modified=now,
                )
            )
    return done


# --- reassignment -------------------------------------------------------------------------------


def reassign(job_ids, max_attempt: int, retried_by: str = "") -> dict[int, tuple[int | None, int]]:
    """Retry the work of these task jobs (closed by the caller, or ended) as new defined jobs,
    one more attempt each, with their payloads and input files. Returns {old job: (its retry,
    or None where the attempts are used up; the old job's attempt)}. Call inside the caller's
    transaction. `retried_by`: a user's retry of the task (no attempt limit is shown)."""
    rows = list(
        TaskJob.objects.filter(job_id__in=list(job_ids))
        .select_related("job", "job__owner_group")
        .order_by("job_id")
    )
    out: dict[int, tuple[int | None, int]] = {tj.job_id: (None, tj.attempt) for tj in rows}
    retry = [tj for tj in rows if tj.attempt < max_attempt]
    by_owner: dict[int, list[TaskJob]] = defaultdict(list)
    for tj in retry:
        by_owner[tj.job.owner_id].append(tj)
    owners = User.objects.in_bulk(list(by_owner))
    new_rows = []
    for owner_id, tjs in by_owner.items():
        jobs = job_services.define_jobs(
            owners[owner_id],
            [
                {
                    "owner_group": tj.job.owner_group,
                    "name": tj.job.name,
                    "setup": tj.job.setup,
                    "cpu_time": tj.job.cpu_time,
                    "user_priority": tj.job.user_priority,
                    "current_priority": tj.job.current_priority,
                    # The same work: its payload and what routed it (PayloadTags, pools).
                    **{f: getattr(tj.job, f) for f in (*PAYLOAD_FIELDS, *REQUIREMENTS)},
                    "reason": (
                        f"defined by task {tj.task_id}: attempt {tj.attempt + 1}, the retry of "
                        f"job {tj.job_id} (task retried by {retried_by})"
                        if retried_by
                        else f"defined by task {tj.task_id}: attempt {tj.attempt + 1} of "
                        f"{max_attempt}, the retry of job {tj.job_id} (reassigned)"
                    ),
                }
                for tj in tjs
            ],
        )
        submission.copy_inputs([(tj.job_id, job) for tj, job in zip(tjs, jobs, strict=True)])
        for tj, job in zip(tjs, jobs, strict=True):
            out[tj.job_id] = (job.pk, tj.attempt)
            new_rows.append(
                TaskJob(
                    job=job,
                    task_id=tj.task_id,
                    n_events=tj.n_events,
                    input_files=tj.input_files,
                    input_size_mb=tj.input_size_mb,
                    attempt=tj.attempt + 1,
                    retry_of_id=tj.job_id,
                )
            )
    TaskJob.objects.bulk_create(new_rows, batch_size=2000)
    TaskJob.objects.filter(job_id__in=[tj.job_id for tj in retry]).update(reassigned=True)
    return out


def reassign_reason(reason: str, retry: int | None, attempt: int, max_attempt: int) -> str:
    """The closed job's reason: the timeout, then its retry or that the attempts are used up."""
    if retry is None:
        return f"{reason}; attempts used up ({attempt} of TASK_MAX_ATTEMPT {max_attempt})"[:255]
    return f"{reason}; reassigned: retried as job {retry} (attempt {attempt + 1})"[:255]
