"""The invariants of jobs and TaskQueues that no interleaving of users, pilots, cycles and
crashes may break. The concurrency and fault tests check them at their end, the stateful test
after every step:

- a TaskQueue membership exists exactly for the activated jobs: each activated job is a member
  of the TaskQueue it records, at its UserPriority, once; no other job is a member;
- the per-priority counts (what the matcher draws from, the director and pages read) equal the
  memberships;
- each job has one state, a known one, the one its last history entry moved it to; a job
  waiting in a TaskQueue is held by no pilot.
"""

from __future__ import annotations

from collections import Counter

SHOWN = 10  # ids quoted per broken invariant


def _ids(ids) -> str:
    ids = sorted(ids)
    more = f" … ({len(ids)} in all)" if len(ids) > SHOWN else ""
    return f"{ids[:SHOWN]}{more}"


def job_invariant_violations() -> list[str]:
    """What is broken now, one sentence per invariant (empty: all hold)."""
    from matcher.models import (
        Job,
        JobStatus,
        JobStatusHistory,
        TaskQueue,
        TaskQueueJob,
        TaskQueuePriorityCount,
    )

    problems = []
    holder = ["pilot_reference"]
    if "pilot_id" in {f.attname for f in Job._meta.concrete_fields}:
        holder.append("pilot_id")
    jobs = {
        pk: rest
        for pk, *rest in Job.objects.order_by().values_list(
            "pk", "status", "task_queue_id", "user_priority", *holder
        )
    }
    members = list(
        TaskQueueJob.objects.order_by().values_list("job_id", "task_queue_id", "user_priority")
    )
    per_job = Counter(job for job, _, _ in members)
    activated = {pk for pk, (status, *_) in jobs.items() if status == JobStatus.ACTIVATED}

    if twice := [j for j, n in per_job.items() if n > 1]:
        problems.append(f"jobs in more than one TaskQueue: {_ids(twice)}")
    if outside := activated - set(per_job):
        problems.append(f"activated jobs in no TaskQueue: {_ids(outside)}")
    if stray := [j for j in per_job if j not in activated]:
        states = Counter(jobs[j][0] if j in jobs else "(no job)" for j in stray)
        problems.append(f"jobs not activated still in a TaskQueue {dict(states)}: {_ids(stray)}")
    if elsewhere := [
        j for j, tq, p in members if j in activated and (jobs[j][1], jobs[j][2]) != (tq, p)
    ]:
        problems.append(
            f"activated jobs whose membership is not their TaskQueue and UserPriority: "
            f"{_ids(elsewhere)}"
        )
    if gone := {tq for _, tq, _ in members} - set(TaskQueue.objects.values_list("pk", flat=True)):
        problems.append(f"memberships of TaskQueues that do not exist: {_ids(gone)}")

    actual = Counter((tq, p) for _, tq, p in members)
    stored = Counter(
        {
            (tq, p): n
            for tq, p, n in TaskQueuePriorityCount.objects.values_list(
                "task_queue_id", "user_priority", "jobs"
            )
        }
    )
    if wrong := {
        f"TQ {tq} p{p}": f"counted {stored[tq, p]}, members {actual[tq, p]}"
        for tq, p in sorted(set(actual) | set(stored))
        if stored[tq, p] != actual[tq, p]
    }:
        problems.append(f"per-priority counts disagree with the memberships: {wrong}")

    if unknown := [pk for pk, (status, *_) in jobs.items() if status not in JobStatus.values]:
        problems.append(f"jobs in no known state: {_ids(unknown)}")
    if held := [pk for pk in activated if any(jobs[pk][3:])]:
        problems.append(f"activated jobs still held by a pilot: {_ids(held)}")
    # Every transition writes its history under the job's lock, so by id the last entry is
    # the last transition.
    last = dict(
        JobStatusHistory.objects.order_by("job_id", "id").values_list("job_id", "to_status")
    )
    if split := [pk for pk, to in last.items() if pk in jobs and jobs[pk][0] != to]:
        shown = {pk: f"{jobs[pk][0]}, history says {last[pk]}" for pk in sorted(split)[:SHOWN]}
        problems.append(f"jobs whose state is not their last transition's: {shown}")
    return problems


def assert_job_invariants() -> None:
    """Fail naming every broken invariant."""
    problems = job_invariant_violations()
    assert not problems, "broken job invariants:\n" + "\n".join(problems)
