"""A task's life after brokerage (JEDI): it ends done, finished or failed once every job has
ended; the defined timeout reassigns a job that waited 4 hours for brokerage (closed, its work
retried as a new job) until TASK_MAX_ATTEMPT attempts are used up."""

import pytest

from brokerage import lifecycle, services
from brokerage.models import Task, TaskJob, TaskStatus, TimeoutAction
from brokerage.timeout_services import timeouts_cycle
from config import clock, gdpconfig
from config.cycles import run_cycle
from matcher.models import Job, JobStatus
from shares.models import GridGroup

HOUR = 3600


@pytest.fixture
def make_task(world, users):
    def make(n=3, status=TaskStatus.RUNNING):
        fields = {
            "name": "mc.simul",
            "owner_group": GridGroup.objects.get(name="lhcb_mc"),
            "n_jobs": n,
        }
        task = services.submit_task(users["erin"], fields, [])
        Task.objects.filter(pk=task.pk).update(status=status)
        return task

    return make


def jobs_of(task):
    return list(
        TaskJob.objects.filter(task=task).order_by("job_id").values_list("job_id", flat=True)
    )


def end(job_ids, status):
    Job.objects.filter(pk__in=job_ids).update(status=status, status_changed=clock.now())


@pytest.mark.parametrize(
    ("ends", "final"),
    [
        (["finished", "finished", "finished"], TaskStatus.DONE),
        (["finished", "failed", "cancelled"], TaskStatus.FINISHED),
        (["failed", "closed", "cancelled"], TaskStatus.FAILED),
    ],
)
def test_a_task_whose_jobs_have_all_ended_gets_its_final_state(make_task, ends, final):
    task = make_task(n=3)
    ids = jobs_of(task)
    for job_id, status in zip(ids, ends, strict=True):
        end([job_id], status)
    run = run_cycle("task_completion")
    assert run.status == "success" and run.counts["tasks"] == 1
    task.refresh_from_db()
    assert task.status == final
    assert task.status_reason.startswith("every job ended:")


def test_a_task_with_a_job_still_open_stays_as_it_is(make_task):
    task = make_task(n=3)
    ids = jobs_of(task)
    end(ids[:2], JobStatus.FINISHED)
    Job.objects.filter(pk=ids[2]).update(status=JobStatus.RUNNING)
    assert run_cycle("task_completion").counts["tasks"] == 0
    assert Task.objects.get(pk=task.pk).status == TaskStatus.RUNNING
    end(ids[2:], JobStatus.FINISHED)
    run_cycle("task_completion")
    assert Task.objects.get(pk=task.pk).status == TaskStatus.DONE
    # A final task stays final: the next cycle leaves it alone.
    assert run_cycle("task_completion").counts["tasks"] == 0


def test_tasks_not_yet_brokered_end_too_when_every_job_was_killed(make_task):
    task = make_task(n=2, status=TaskStatus.ASSIGNING)
    end(jobs_of(task), JobStatus.CANCELLED)
    run_cycle("task_completion")
    assert Task.objects.get(pk=task.pk).status == TaskStatus.FAILED


def test_a_defined_task_job_past_four_hours_is_closed_and_its_work_retried(make_task):
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


def test_after_the_last_attempt_the_work_is_given_up_and_the_task_ends(make_task):
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


def test_a_retried_attempt_does_not_count_against_its_task(make_task):
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


def test_the_cycle_runs_every_minute():
    from config.schedules import SCHEDULES

    assert SCHEDULES["task_completion"] == 1


@pytest.mark.parametrize(
    ("counts", "final"),
    [
        ({}, None),
        ({"finished": 2, "running": 1}, None),
        ({"finished": 2}, "done"),
        ({"finished": 1, "closed": 1}, "finished"),
        ({"failed": 1, "cancelled": 1}, "failed"),
    ],
)
def test_the_outcome_rule(counts, final):
    assert lifecycle.outcome(counts) == final


def test_the_task_list_page_and_api_show_the_same_per_state_counts_and_progress(
    make_task, client, api, users
):
    task = make_task(n=3)
    ids = jobs_of(task)
    end(ids[:2], JobStatus.FINISHED)
    Job.objects.filter(pk=ids[2]).update(status=JobStatus.RUNNING)
    client.force_login(users["erin"])
    for url in ("/brokerage/tasks/", f"/brokerage/tasks/{task.pk}/"):
        html = client.get(url).content.decode()
        assert f'href="/jobs/?task={task.pk}&amp;status=finished">2 finished</a>' in html, url
        assert f'href="/jobs/?task={task.pk}&amp;status=running">1 running</a>' in html, url
        assert 'class="progress"' in html and "2/3 ended" in html, url
    r = api(users["erin"]).get("/api/v1/tasks/")
    [row] = r.data["results"]
    assert row["job_counts"] == {"running": 1, "finished": 2}
    assert (
        api(users["erin"]).get(f"/api/v1/tasks/{task.pk}/").data["job_counts"] == row["job_counts"]
    )

    end(ids[2:], JobStatus.FAILED)
    run_cycle("task_completion")
    html = client.get(f"/brokerage/tasks/{task.pk}/").content.decode()
    assert '<span class="status finished">finished</span>' in html and "3/3 ended" in html
