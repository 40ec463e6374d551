"""The defined timeout reassigns a task's job that waited 4 hours for brokerage (closed, its
work retried as a new job) until TASK_MAX_ATTEMPT attempts are used up (brokerage.lifecycle
does the retry; moved here from brokerage/tests/test_task_lifecycle.py with the timeouts)."""

from brokerage import lifecycle
from brokerage.models import Task, TaskJob, TaskStatus
from brokerage.tests.test_task_lifecycle import HOUR, end, jobs_of, make_task  # noqa: F401
from core import clock, gdpconfig
from core.cycles import run_cycle
from matcher.models import Job, JobStatus
from timeouts.models import TimeoutAction
from timeouts.services import timeouts_cycle


def test_a_defined_task_job_past_four_hours_is_closed_and_its_work_retried(make_task):  # noqa: F811
    task = make_task(n=2)
    first, other = jobs_of(task)
    Job.objects.filter(pk=other).update(status=JobStatus.ACTIVATED)
    clock.advance(4 * HOUR + 60)
    result = timeouts_cycle()
    assert (result["defined"], result["to_closed"], result["retried"]) == (1, 1, 1)
    old = Job.objects.get(pk=first)
    assert old.status == JobStatus.CLOSED
    entry = old.history.order_by("-at", "-pk").first()
    assert (entry.from_status, entry.to_status) == ("defined", "closed")
    action = TimeoutAction.objects.get(job_id=first)
    assert (action.rule, action.from_status, action.to_status) == ("defined", "defined", "closed")
    [retry] = set(jobs_of(task)) - {first, other}
    assert f"retried as job {retry} (attempt 2)" in old.status_reason
    new = Job.objects.get(pk=retry)
    assert new.status == JobStatus.DEFINED and new.name == old.name
    assert f"the retry of job {first}" in new.status_reason
    row = TaskJob.objects.get(job_id=retry)
    assert row.attempt == 2 and not row.reassigned
    assert TaskJob.objects.get(job_id=first).reassigned
    assert Task.objects.get(pk=task.pk).status == TaskStatus.READY  # back to job brokerage


def test_after_the_last_attempt_the_work_is_given_up_and_the_task_ends(make_task):  # noqa: F811
    gdpconfig.set_value("TASK_MAX_ATTEMPT", 2)
    task = make_task(n=1)
    for _ in range(2):
        clock.advance(4 * HOUR + 60)
        timeouts_cycle()
    ids = jobs_of(task)
    assert len(ids) == 2  # the first attempt and its one retry
    last = Job.objects.get(pk=ids[-1])
    assert last.status == JobStatus.CLOSED
    assert "attempts used up (2 of TASK_MAX_ATTEMPT 2)" in last.status_reason
    assert not TaskJob.objects.get(job_id=last.pk).reassigned
    run_cycle("task_completion")
    task.refresh_from_db()
    assert task.status == TaskStatus.FAILED


def test_a_retried_attempt_does_not_count_against_its_task(make_task):  # noqa: F811
    task = make_task(n=2)
    _first, other = jobs_of(task)
    Job.objects.filter(pk=other).update(status=JobStatus.ACTIVATED)
    clock.advance(4 * HOUR + 60)
    timeouts_cycle()
    retry = max(jobs_of(task))
    end([other, retry], JobStatus.FINISHED)
    run_cycle("task_completion")
    assert Task.objects.get(pk=task.pk).status == TaskStatus.DONE
    counts = lifecycle.job_counts([task.pk])[task.pk]
    assert counts.by_status == {"finished": 2, "closed": 1}
    assert (counts.progress.total, counts.progress.finished, counts.reassigned) == (2, 2, 1)
