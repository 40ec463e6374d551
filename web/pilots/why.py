"""What the pilots area adds to the matcher's job and TaskQueue pages: its part of "why is my job
not running?" (web.matcher.why: the director's latest decisions for the job's TaskQueue, the
pilots waiting for it, and what the pilots that could take it are doing), and the job's pilot and
the TaskQueue's pilots (web.matcher.selectors)."""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlencode

from django.db.models import Q

from core import clock
from core.models import CycleRun
from matcher import errors
from matcher.lifecycle import CLAIMED_STATES
from matcher.models import Job, JobStatus, TaskQueue
from pilots import director
from pilots.models import (
    PILOT_WAITING_STATES,
    DirectorDecision,
    Pilot,
    PilotLogLine,
    PilotStatus,
)
from web.matcher.why_part import Part

RECENT_DECISIONS = 10  # the director draws a TaskQueue's pilots at random: look a few cycles back


def pilots_for(tq: TaskQueue) -> tuple[str, str]:
    pilots = Pilot.objects.filter(task_queue_id=tq.pk, status__in=PILOT_WAITING_STATES).count()
    running = Pilot.objects.filter(task_queue_id=tq.pk, status=PilotStatus.RUNNING).count()
    text = f"{pilots} pilot{'s' if pilots != 1 else ''} submitted for it wait at their CEs"
    return text + (f"; {running} run." if running else "."), f"/pilots/?task_queue={tq.pk}"


AT_WORK_CES = 5  # CEs named, the busiest first; the rest summed up


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def pilots_at_work(job: Job, ces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """What the running pilots at `ces` ((site, CE) whose pilots may take the job) are doing,
    a line (text, the pilots page's link) per CE: "5 pilots run at DIRAC.Local.ch / localhost,
    all running other users' jobs". Private pilots of another group (which could not take it)
    are left out. A pilot between jobs either asks for one now or is ending: one with less
    time left than the job's CPU segment does not take it."""
    names = {ce for _site, ce in ces}
    if not names:
        return []
    group = job.owner_group.name if job.owner_group_id else ""
    running = dict(
        Pilot.objects.filter(status=PilotStatus.RUNNING, ce__in=names)
        .exclude(Q(private=True) & ~Q(owner_group=group))
        .values_list("pk", "ce")
    )
    if not running:
        text = "No pilot runs at the computing elements that can take it: it waits for the "
        return [(text + "director to send some.", "")]
    held = Job.objects.filter(pilot_id__in=list(running), status__in=CLAIMED_STATES)
    owner_of = dict(held.values_list("pilot_id", "owner_id"))
    site_of = {ce: site for site, ce in ces}
    per_ce: dict[str, Counter] = {}
    for pilot_id, ce in running.items():
        owner = owner_of.get(pilot_id)
        doing = "idle" if owner is None else "own" if owner == job.owner_id else "others"
        per_ce.setdefault(ce, Counter())[doing] += 1
    busiest = sorted(per_ce, key=lambda ce: (-sum(per_ce[ce].values()), ce))
    owner_name = job.owner.username if job.owner_id else "its owner"
    out = []
    for ce in busiest[:AT_WORK_CES]:
        counts = per_ce[ce]
        n = sum(counts.values())
        words = {
            "others": "running other users' jobs",
            "own": f"running {owner_name}'s other jobs",
            "idle": "between jobs (asking for one, or ending)",
        }
        doing = [(counts[k], words[k]) for k in ("others", "own", "idle") if counts[k]]
        if len(doing) == 1:
            what = f"all {doing[0][1]}" if n > 1 else doing[0][1]
        else:
            what = ", ".join(f"{k} {text}" for k, text in doing)
        runs = "runs" if n == 1 else "run"
        url = "/pilots/?" + urlencode({"status": PilotStatus.RUNNING, "ce": ce})
        out.append((f"{_plural(n, 'pilot')} {runs} at {site_of[ce]} / {ce}, {what}.", url))
    rest = busiest[AT_WORK_CES:]
    if rest:
        more = sum(sum(per_ce[ce].values()) for ce in rest)
        runs = "runs" if more == 1 else "run"
        text = f"{_plural(more, 'more pilot')} {runs} at {_plural(len(rest), 'other CE')}."
        out.append((text, ""))
    return out


def director_part(job: Job) -> Part | None:
    """The director's latest decisions for the job's TaskQueue, with its own reason when it
    sent no pilot though its formula drew some."""
    if job.status != JobStatus.ACTIVATED or not job.task_queue_id:
        return None
    url = f"/pilots/director/?task_queue={job.task_queue_id}"
    runs = CycleRun.objects.filter(kind="director").order_by("-started", "-id")
    decisions = list(
        DirectorDecision.objects.filter(
            task_queue_id=job.task_queue_id,
            cycle_run__in=list(runs.values_list("pk", flat=True)[:RECENT_DECISIONS]),
        ).order_by("-cycle_run")
    )
    part = Part("Pilot director")
    if not decisions:
        return part.add(
            "The director has not decided on its TaskQueue yet (it runs every minute).", url
        )
    last = decisions[0]
    part.add(
        f"Last cycle at {clock.label(last.at, 'Y-m-d H:i')}: λ = {last.lam:.2f}, "
        f"drew {last.drawn}, cap {last.cap}, {last.waiting_pilots} waiting, sent {last.submitted}"
        + (f": {last.skipped}" if last.skipped else ""),
        url,
    )
    tried = next((d for d in decisions if d.drawn > 0 and d.cap > 0), None)
    note = director.blocker(tried.skipped) if tried else None
    if note:
        part.blocking = True
        part.headline = f"The director sends it no pilot: {note}."
        if tried is not last:
            part.add(
                f"When it last drew pilots for it, at {clock.label(tried.at, 'Y-m-d H:i')}: {note}",
                url,
            )
    return part


JOB_LOG_LINES = 50  # the pilot's last lines about the job, on the job's page


def job_pilot(user, job: Job) -> dict:
    """The pilot that claimed the job (retention may have deleted it: then none), with its
    worker node and its last log lines about the job; a failed job's error described
    (matcher.errors)."""
    pilot = Pilot.objects.filter(pk=job.pilot_id).first() if job.pilot_id else None
    lines = []
    if pilot is not None:
        about = PilotLogLine.objects.filter(pilot=pilot, job_id=job.pk).order_by("-id")
        lines = sorted(about[:JOB_LOG_LINES], key=lambda line: line.pk)
    error = errors.describe(job.error_code) if job.error_code is not None else None
    return {"pilot": pilot, "pilot_log": lines, "job_error": error}


def taskqueue_pilots(user, tq_id: int, past: bool) -> dict:
    """A TaskQueue's waiting pilots; for one removed, the pilots sent for it (those the user
    may see) and the director's last decisions on it."""
    if not past:
        waiting = Pilot.objects.filter(task_queue_id=tq_id, status__in=PILOT_WAITING_STATES)
        return {"waiting_pilots": waiting.count()}
    pilots = Pilot.objects.visible_to(user).filter(task_queue_id=tq_id)
    decisions = DirectorDecision.objects.filter(task_queue_id=tq_id).order_by("-cycle_run")
    return {
        "refers": pilots.exists(),
        "pilots": pilots.order_by("-submitted", "-id")[:20],
        "pilot_count": pilots.count(),
        "decisions": decisions[:10],
    }
