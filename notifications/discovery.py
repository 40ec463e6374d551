"""What is due: the jobs and tasks that ended, for whom, on which channel (read-only, but for
the cursor and the requests' `done`; the Notice rows are inserted by services).

Never a scan of every job: the job status history is read by its primary key from the
cursor on (ScanCursor), the jobs by their ids; tasks by owner (only users with a default) and
state; open requests by their own `done` index, answered ones by their job.

A job can end more than once: rescheduled after it ended, it ends again. Each ending is an
episode, the id of the history row into its final state (the job's latest such row when it
is found), so that the second ending is told as the first was (a default whose scope is jobs,
a request about the job) and a re-read of the same one is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from brokerage.models import Task, TaskJob, TaskStatus
from core import clock
from matcher import lifecycle
from matcher.models import Job, JobStatusHistory
from notifications.models import (
    JOB_CURSOR,
    Channel,
    Kind,
    Notice,
    NotificationPreference,
    NotificationRequest,
    ScanCursor,
    Scope,
    ensure_cursor,
    wants,
)

# Longer than any move's transaction: a history row whose id was handed out before the cursor
# passed it but that committed later is still read (see ScanCursor).
LAG = timedelta(minutes=2)

JOB_FINAL = tuple(sorted(lifecycle.FINAL_STATES))
TASK_FINAL = (TaskStatus.DONE, TaskStatus.FINISHED, TaskStatus.FAILED)


@dataclass(frozen=True)
class Ended:
    """A job or task in a final state, as a notice tells it."""

    kind: str
    object_id: int
    owner_id: int
    name: str
    state: str
    reason: str
    episode: int = 0

    @property
    def outcome(self) -> str:
        """finished or failed, as the state says: a job finished; a task done (every job
        finished) or finished (some did, the others did not: its reason counts them). Failed:
        anything else final (a job failed, cancelled or closed; a task none of whose jobs
        finished)."""
        ok = (lifecycle.FINISHED,) if self.kind == Kind.JOB else TASK_FINISHED
        return "finished" if self.state in ok else "failed"


TASK_FINISHED = (TaskStatus.DONE, TaskStatus.FINISHED)


def _job(row: dict, episode: int = 0) -> Ended:
    return Ended(
        Kind.JOB,
        row["pk"],
        row["owner_id"],
        row["name"],
        row["status"],
        row["status_reason"],
        episode,
    )


def _task(row: dict) -> Ended:
    return Ended(
        Kind.TASK, row["pk"], row["owner_id"], row["name"], row["status"], row["status_reason"]
    )


def episodes(job_ids) -> dict[int, int]:
    """Each job's latest ending: the id of its latest history row into a final state (read
    through the history's job index)."""
    rows = (
        JobStatusHistory.objects.filter(job_id__in=list(job_ids), to_status__in=JOB_FINAL)
        .values("job_id")
        .annotate(last=Max("id"))
        .order_by()
    )
    return {r["job_id"]: r["last"] for r in rows}


JOB_FIELDS = ("pk", "owner_id", "name", "status", "status_reason")


def notices_for(user, ended: Ended, channels, webhook_url: str, now: datetime) -> list[Notice]:
    """Unsaved Notice rows for `user` about `ended`, one per channel."""
    out = []
    for channel in channels:
        target = user.email if channel == Channel.EMAIL else webhook_url
        out.append(
            Notice(
                user_id=user.pk,
                kind=ended.kind,
                object_id=ended.object_id,
                channel=channel,
                episode=ended.episode,
                name=ended.name[:200],
                outcome=ended.outcome,
                final_state=ended.state,
                reason=ended.reason[:255],
                target=target or "",
                created=now,
                updated=now,
            )
        )
    return out


def enabled_preferences() -> dict[int, NotificationPreference]:
    prefs = NotificationPreference.objects.filter(Q(email=True) | ~Q(webhook_url=""))
    return {p.user_id: p for p in prefs.select_related("user")}


# --- requests ----------------------------------------------------------------------------------


def from_requests(batch: int, now: datetime) -> tuple[list[Notice], list[int]]:
    """The notices of the open requests whose job or task has ended, and those requests."""
    reqs = list(
        NotificationRequest.objects.filter(done=False)
        .filter(Q(job__status__in=JOB_FINAL) | Q(task__status__in=TASK_FINAL))
        .select_related("user")
        .order_by("id")[:batch]
    )
    if not reqs:
        return [], []
    job_ids = [r.job_id for r in reqs if r.job_id]
    last = episodes(job_ids)
    jobs = {
        r["pk"]: _job(r, last.get(r["pk"], 0))
        for r in Job.objects.filter(pk__in=job_ids).values(*JOB_FIELDS)
    }
    tasks = {
        r["pk"]: _task(r)
        for r in Task.objects.filter(pk__in=[r.task_id for r in reqs if r.task_id]).values(
            *JOB_FIELDS
        )
    }
    ended = {(Kind.JOB, pk): e for pk, e in jobs.items()}
    ended.update({(Kind.TASK, pk): e for pk, e in tasks.items()})
    return answer(reqs, ended, now), [r.pk for r in reqs]


def answer(reqs, ended: dict[tuple[str, int], Ended], now: datetime) -> list[Notice]:
    """The notices of requests about work in `ended` ({(kind, id): Ended}), on the channels
    and for the outcomes each asked (a request without a URL: the preference's)."""
    webhooks = dict(
        NotificationPreference.objects.filter(user_id__in={r.user_id for r in reqs}).values_list(
            "user_id", "webhook_url"
        )
    )
    notices: list[Notice] = []
    for r in reqs:
        found = ended.get((r.kind, r.object_id))
        if found is not None and wants(r.outcomes, found.outcome):
            url = r.webhook_url or webhooks.get(r.user_id, "")
            notices += notices_for(r.user, found, r.channels, url, now)
    return notices


# --- the defaults ------------------------------------------------------------------------------


def _history_rows(cursor: ScanCursor, top: int, batch: int) -> tuple[list[tuple], int]:
    """(id, job id, at) of the history rows into a final state from `previous` on, and the
    position the cursor reaches: `top` unless the batch was full."""
    final = JobStatusHistory.objects.filter(to_status__in=JOB_FINAL).order_by("id")
    fields = ("id", "job_id", "at")
    again = list(final.filter(id__gt=cursor.previous, id__lte=cursor.position).values_list(*fields))
    new = list(final.filter(id__gt=cursor.position, id__lte=top).values_list(*fields)[:batch])
    reached = new[-1][0] if len(new) == batch else max(top, cursor.position)
    return again + new, reached


def from_history(prefs, cursor: ScanCursor, top: int, batch: int, now) -> tuple[list, int]:
    """The notices about jobs that ended since the cursor: those the defaults whose scope is
    jobs call for (jobs outside tasks), and those of requests already answered about an
    earlier ending of the same job (it was rescheduled); and the cursor's new position."""
    rows, reached = _history_rows(cursor, top, batch)
    ended_at: dict[int, datetime] = {}
    for _, job_id, at in rows:
        ended_at[job_id] = max(at, ended_at.get(job_id, at))
    if not ended_at:
        return [], reached
    final = Job.objects.filter(pk__in=list(ended_at), status__in=JOB_FINAL)
    finals = list(final.values(*JOB_FIELDS))
    last = episodes(r["pk"] for r in finals)
    jobs = {r["pk"]: _job(r, last.get(r["pk"], 0)) for r in finals}
    notices: list[Notice] = []
    wide = {uid: p for uid, p in prefs.items() if p.scope == Scope.JOBS}
    mine = [pk for pk, e in jobs.items() if e.owner_id in wide]
    in_tasks = set(TaskJob.objects.filter(job_id__in=mine).values_list("job_id", flat=True))
    for pk in mine:
        pref, ended = wide[jobs[pk].owner_id], jobs[pk]
        if pk in in_tasks or ended_at[pk] < pref.created:
            continue
        if wants(pref.outcomes, ended.outcome):
            notices += notices_for(pref.user, ended, pref.channels(), pref.webhook_url, now)
    answered = NotificationRequest.objects.filter(job_id__in=list(jobs), done=True)
    reqs = list(answered.select_related("user"))
    if reqs:
        notices += answer(reqs, {(Kind.JOB, pk): e for pk, e in jobs.items()}, now)
    return notices, reached


def from_tasks(prefs, cursor: ScanCursor, batch: int, now) -> list[Notice]:
    """The notices the defaults call for about tasks that ended since the cursor's
    `task_since` (read through the owner's index: only users with a default)."""
    tasks = Task.objects.filter(
        owner_id__in=list(prefs), status__in=TASK_FINAL, modified__gte=cursor.task_since
    ).order_by("id")
    notices: list[Notice] = []
    for row in tasks.values(*JOB_FIELDS, "modified")[:batch]:
        pref = prefs[row["owner_id"]]
        ended = _task(row)
        if row["modified"] >= pref.created and wants(pref.outcomes, ended.outcome):
            notices += notices_for(pref.user, ended, pref.channels(), pref.webhook_url, now)
    return notices


def top_of_history() -> int:
    return JobStatusHistory.objects.order_by("-id").values_list("id", flat=True).first() or 0


def advance(reached: int) -> None:
    """Move the cursor to `reached` (never back: two runs at once), and `previous` up to
    where it stood a LAG ago."""
    real_now, clock_now = timezone.now(), clock.now()
    with transaction.atomic():
        cursor = ScanCursor.objects.select_for_update().get(name=JOB_CURSOR)
        if real_now - cursor.rolled >= LAG:
            cursor.previous, cursor.rolled = cursor.position, real_now
            cursor.task_since, cursor.task_mark = cursor.task_mark, clock_now
        cursor.position = max(cursor.position, reached)
        cursor.save()


def cursor() -> ScanCursor:
    return ensure_cursor(timezone.now(), clock.now())
