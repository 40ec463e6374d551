""" "Why is my job not running?": one explanation per job, from every part of the system.

The matcher explains matching, its TaskQueue's priority and share position, and the pilots
waiting for it. Apps that place jobs before they reach a TaskQueue (brokerage, ClassAds) add
their own part by registering an explainer, so that this module needs none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from config import clock
from config.models import CycleRun
from matcher import director, match
from matcher.lifecycle import RUNNING_STATES, UNBROKERED_STATES
from matcher.models import FINAL_STATES, DirectorDecision, Job, JobStatus, Pilot, TaskQueue
from matcher.models import PILOT_WAITING_STATES as WAITING_PILOTS

RECENT_DECISIONS = 10  # the director draws a TaskQueue's pilots at random: look a few cycles back


@dataclass
class Part:
    """One piece of the explanation: a title, lines (text, optional link), whether it is what
    holds the job back, and then the sentence that says so first (the headline)."""

    title: str
    lines: list[tuple[str, str]] = field(default_factory=list)
    blocking: bool = False
    headline: str = ""

    def add(self, text: str, url: str = "") -> Part:
        self.lines.append((text, url))
        return self


EXPLAINERS: list[Callable[[Job], list[Part]]] = []


def register(fn: Callable[[Job], list[Part]]) -> Callable[[Job], list[Part]]:
    EXPLAINERS.append(fn)
    return fn


# The section's heading by the job's state: only a job that waits is "not running yet".
TITLES = {
    JobStatus.SENT: "Where it is going",
    JobStatus.STARTING: "Where it is starting",
    JobStatus.RUNNING: "Where it runs",
    JobStatus.HOLDING: "Why is it holding?",
    JobStatus.TRANSFERRING: "Where its output goes",
}
WAITING_TITLE = "Why is it not running yet?"


def title(job: Job) -> str:
    if job.status in FINAL_STATES:
        return f"Why it is {job.status}"
    return TITLES.get(job.status, WAITING_TITLE)


def headline(job: Job) -> str:
    s = job.status
    if s in FINAL_STATES:
        return f"It is {s}: {job.status_reason or 'nothing more to do'}."
    if s in RUNNING_STATES:
        return f"It is {s} at {job.site or 'its site'}."
    if s == JobStatus.HOLDING:
        return f"It is holding: {job.status_reason or 'no reason given'}."
    if s == JobStatus.ACTIVATED:
        return "It waits in a TaskQueue for a pilot that can take it."
    if s in UNBROKERED_STATES:
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
        gone = "Its TaskQueue is gone; the cleanup cycle puts the job back."
        return Part("TaskQueue", blocking=True, headline=gone).add(gone)
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
        from matcher.selectors import job_warnings

        reasons = job_warnings([job])[job.pk]
        part.headline = "No active computing element can take it" + (
            f": {'; '.join(reasons)}." if reasons else "."
        )
        part.add("No active computing element can take it:")
    for row in analysis["ces"]:
        if not row["matches"]:
            part.add(f"{row['site']} / {row['ce']}: {row['rule']} — {row['detail']}")
    return part


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


def explain(job: Job) -> dict:
    """{"title", "headline", "parts": [Part], "analysis": the matcher's per-CE analysis}. The
    headline states the first real blocker (a hold, no CE, the director's own reason), in that
    order, before the state's general sentence."""
    analysis = match.analyse_job(job)
    parts: list[Part] = []
    for fn in EXPLAINERS:
        parts.extend(fn(job))
    for part in (matching_part(job, analysis), director_part(job), taskqueue_part(job)):
        if part is not None:
            parts.append(part)
    if job.status == JobStatus.HOLDING or "hold" in job.status_reason.lower():
        parts.insert(0, Part("Hold", blocking=True).add(job.status_reason or "on hold"))
    first = next((p.headline for p in parts if p.blocking and p.headline), "")
    return {
        "title": title(job),
        "headline": first or headline(job),
        "parts": parts,
        "analysis": analysis,
    }
