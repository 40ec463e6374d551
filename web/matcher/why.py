""" "Why is my job not running?": one explanation per job, from every part of the system.

The matcher explains matching and its TaskQueue's priority and share position; the areas that
place jobs before they reach a TaskQueue (brokerage, ClassAds) add their parts before it, and the
pilots area its director's part after matching and the pilots waiting for the TaskQueue.
"""

from __future__ import annotations

from matcher import dispatcher
from matcher.lifecycle import RUNNING_STATES, UNBROKERED_STATES
from matcher.models import FINAL_STATES, Job, JobStatus, TaskQueue
from web.brokerage.why import brokerage_parts
from web.classads.why import classad_parts
from web.matcher.why_part import Part
from web.pilots.why import director_part, pilots_at_work, pilots_for

# Parts that come before matching: the placement before a job reaches a TaskQueue.
BEFORE_MATCHING = (brokerage_parts, classad_parts)
# Parts after matching and before the TaskQueue's: the pilot director.
AFTER_MATCHING = (director_part,)
# Lines (text, url) of the TaskQueue part: the pilots waiting for it.
TASKQUEUE_LINES = (pilots_for,)


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
    for line in TASKQUEUE_LINES:
        part.add(*line(tq))
    return part


def matching_part(job: Job, analysis: dict) -> Part | None:
    if not analysis.get("waiting") or not analysis.get("task_queue"):
        return None
    n = analysis.get("matching_ces", 0)
    part = Part("Matching", blocking=n == 0)
    if n:
        part.add(f"Pilots of {n} computing element{'s' if n != 1 else ''} can take it.")
        tq = dispatcher.definition_of(analysis["task_queue"])
        if tq is not None:
            part.add(
                f"A pilot takes it only with at least {tq.cpu_time:,} s of CPU time left "
                "(its TaskQueue's CPU segment): pilots ask with the time they have left."
            )
        able = [(row["site"], row["ce"]) for row in analysis["ces"] if row["matches"]]
        for text, url in pilots_at_work(job, able):
            part.add(text, url)
    else:
        from web.matcher.selectors import job_warnings

        reasons = job_warnings([job])[job.pk]
        part.headline = "No active computing element can take it" + (
            f": {'; '.join(reasons)}." if reasons else "."
        )
        part.add("No active computing element can take it:")
        from matcher import servability

        tq = dispatcher.definition_of(analysis["task_queue"])
        found = servability.shortfalls(tq) if tq is not None else []
        if found:
            part.add(servability.flag_sentence(tq.id, found), f"/taskqueues/{tq.id}/#unservable")
    for row in analysis["ces"]:
        if not row["matches"]:
            part.add(f"{row['site']} / {row['ce']}: {row['rule']} — {row['detail']}")
    return part


def explain(job: Job) -> dict:
    """{"title", "headline", "parts": [Part], "analysis": the matcher's per-CE analysis}. The
    headline states the first real blocker (a hold, no CE, the director's own reason), in that
    order, before the state's general sentence."""
    analysis = dispatcher.analyse_job(job)
    parts: list[Part] = []
    for fn in BEFORE_MATCHING:
        parts.extend(fn(job))
    late = [fn(job) for fn in AFTER_MATCHING]
    for part in (matching_part(job, analysis), *late, taskqueue_part(job)):
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
