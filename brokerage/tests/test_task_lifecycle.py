"""A task's life after brokerage (JEDI): it ends done, finished or failed once every job has
ended. The defined timeout's reassignment of a job that waited 4 hours for brokerage (closed,
its work retried as a new job, until TASK_MAX_ATTEMPT attempts are used up) is tested with the
timeouts (timeouts/tests/test_task_reassignment.py)."""

import pytest

from brokerage import lifecycle
from brokerage.models import Task, TaskJob, TaskStatus
from brokerage.services.submission import submit_task
from core import clock
from core.cycles import run_cycle
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
        task = submit_task(users["erin"], fields, [])
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


def test_the_cycle_runs_every_minute():
    from core.schedules import SCHEDULES

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
