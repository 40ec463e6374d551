""" "Why is my job not running?": one explanation per job, from every part of the system.

The matcher explains matching, its TaskQueue's priority and share position, and the pilots
waiting for it. Apps that place jobs before they reach a TaskQueue (brokerage, ClassAds) add
their own part by registering an explainer, so that this module needs none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from matcher import match
from matcher.models import FINAL_STATES, Job, JobStatus, Pilot, TaskQueue
from matcher.models import PILOT_WAITING_STATES as WAITING_PILOTS


@dataclass
class Part:
    """One piece of the explanation: a title, lines (text, optional link), and whether it is
    what holds the job back."""

    title: str
    lines: list[tuple[str, str]] = field(default_factory=list)
    blocking: bool = False

    def add(self, text: str, url: str = "") -> Part:
        self.lines.append((text, url))
        return self


EXPLAINERS: list[Callable[[Job], list[Part]]] = []


def register(fn: Callable[[Job], list[Part]]) -> Callable[[Job], list[Part]]:
    EXPLAINERS.append(fn)
    return fn


def headline(job: Job) -> str:
    s = job.status
    if s in FINAL_STATES:
        return f"It is {s}: {job.status_reason or 'nothing more to do'}."
    if s in (JobStatus.RUNNING, JobStatus.STARTING, JobStatus.SENT):
        return f"It is {s} at {job.site or 'its site'}."
    if s == JobStatus.HOLDING:
        return f"It is holding: {job.status_reason or 'no reason given'}."
    if s == JobStatus.ACTIVATED:
        return "It waits in a TaskQueue for a pilot that can take it."
    if s in (JobStatus.DEFINED, JobStatus.ASSIGNED):
        return "It waits for brokerage to choose where it may run."
    if s == JobStatus.PENDING:
        return f"It is pending: {job.status_reason or 'brokerage found no place yet'}."
    if s == JobStatus.THROTTLED:
        return f"It is throttled: {job.status_reason or 'its owner is over a limit'}."
    return job.status_reason or s


def taskqueue_part(job: Job) -> Part | None:
    if job.status != JobStatus.ACTIVATED or not job.task_queue_id:
        return None
    tq = TaskQueue.objects.filter(pk=job.task_queue_id).select_related("owner_group").first()
    if tq is None:
        return Part("TaskQueue", blocking=True).add(
            "Its TaskQueue is gone; the cleanup cycle puts the job back."
        )
    higher = TaskQueue.objects.filter(priority__gt=tq.priority).count()
    total = TaskQueue.objects.count()
    part = Part("TaskQueue priority and share")
    part.add(f"TQ {tq.pk} has priority {tq.priority:.3f}", f"/taskqueues/{tq.pk}/")
    part.add(f"{higher} of {total} TaskQueues have a higher priority.")
    group = tq.owner_group
    part.add(
        f"Its group {group.name} has JobShare {group.job_share:g}"
        + (" (JobSharing: one entity)" if group.job_sharing else ""),
        "/shares/",
    )
    pilots = Pilot.objects.filter(task_queue_id=tq.pk, status__in=WAITING_PILOTS).count()
    running = Pilot.objects.filter(task_queue_id=tq.pk, status="Running").count()
    pilot_part = f"{pilots} pilot{'s' if pilots != 1 else ''} submitted for it wait at their CEs"
    part.add(pilot_part + (f"; {running} run." if running else "."), f"/pilots/?task_queue={tq.pk}")
    return part


def matching_part(job: Job, analysis: dict) -> Part | None:
    if not analysis.get("waiting") or not analysis.get("task_queue"):
        return None
    n = analysis.get("matching_ces", 0)
    part = Part("Matching", blocking=n == 0)
    if n:
        part.add(f"Pilots of {n} computing element{'s' if n != 1 else ''} can take it.")
    else:
        part.add("No active computing element can take it:")
    for row in analysis["ces"]:
        if not row["matches"]:
            part.add(f"{row['site']} / {row['ce']}: {row['rule']} — {row['detail']}")
    return part


def explain(job: Job) -> dict:
    """{"headline", "parts": [Part], "analysis": the matcher's per-CE analysis}."""
    analysis = match.analyse_job(job)
    parts: list[Part] = []
    for fn in EXPLAINERS:
        parts.extend(fn(job))
    for part in (matching_part(job, analysis), taskqueue_part(job)):
        if part is not None:
            parts.append(part)
    if job.status == JobStatus.HOLDING or "hold" in job.status_reason.lower():
        parts.insert(0, Part("Hold", blocking=True).add(job.status_reason or "on hold"))
    return {"headline": headline(job), "parts": parts, "analysis": analysis}
