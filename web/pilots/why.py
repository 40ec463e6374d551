"""What the pilots area adds to the matcher's job and TaskQueue pages: its part of "why is my job
not running?" (web.matcher.why: the director's latest decisions for the job's TaskQueue and the
pilots waiting for it), and the job's pilot and the TaskQueue's pilots (web.matcher.selectors)."""

from __future__ import annotations

from core import clock
from core.models import CycleRun
from matcher.models import Job, JobStatus, TaskQueue
from pilots import director
from pilots.models import PILOT_WAITING_STATES, DirectorDecision, Pilot, PilotStatus
from web.matcher.why_part import Part

RECENT_DECISIONS = 10  # the director draws a TaskQueue's pilots at random: look a few cycles back


def pilots_for(tq: TaskQueue) -> tuple[str, str]:
    pilots = Pilot.objects.filter(task_queue_id=tq.pk, status__in=PILOT_WAITING_STATES).count()
    running = Pilot.objects.filter(task_queue_id=tq.pk, status=PilotStatus.RUNNING).count()
    text = f"{pilots} pilot{'s' if pilots != 1 else ''} submitted for it wait at their CEs"
    return text + (f"; {running} run." if running else "."), f"/pilots/?task_queue={tq.pk}"


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


def job_pilot(user, job: Job) -> dict:
    """The pilot that claimed the job (retention may have deleted it: then none)."""
    return {"pilot": Pilot.objects.filter(pk=job.pilot_id).first() if job.pilot_id else None}


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
