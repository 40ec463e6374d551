"""Tasks through their pages: the trace of a throttled analysis run opened from the home page,
a task's failed jobs and back, a task's page reaching its final state."""

import itertools
import re

import pytest
from rest_framework.test import APIClient

from matcher.services import rollups
from simulation import demo

pytestmark = pytest.mark.browser
PILOTS = itertools.count(1)


@pytest.fixture
def panda_world(transactional_db):
    from brokerage.models import GlobalShare
    from brokerage.topology_import import import_topology
    from simulation import panda_demo

    demo.create_world()
    import_topology(panda_demo.topology())
    for name, target in panda_demo.GLOBAL_SHARES:
        GlobalShare.objects.create(name=name, target_pct=target)


def submit_task_in_the_form(page, name, n_jobs):
    """erin submits a production task through the Submit a task form; returns the Task."""
    from brokerage.models import Task

    page.goto("/brokerage/tasks/submit/")
    assert page.page.input_value("#id_kind") == "production"  # lhcb_mc: a production group
    page.page.fill("#id_name", name)
    page.page.fill("#id_owner_group", "lhcb_mc")
    page.page.fill("#id_processing_type", "evgen")
    page.page.fill("#id_n_jobs", str(n_jobs))
    page.page.click("button[type=submit]")
    page.page.wait_for_url("**/brokerage/tasks/*/")
    return Task.objects.get(name=name)


def run_jobs(task, outcomes):
    """A pilot takes the task's jobs one by one through the API and reports each outcome."""
    from rest_framework.authtoken.models import Token

    from brokerage.models import TaskJob
    from matcher.models import Job

    pilot = APIClient()
    pilot.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user__username='pilot').key}")
    done = []
    for outcome in outcomes:
        waiting = Job.objects.filter(
            pk__in=TaskJob.objects.filter(task=task).values("job_id"), status="activated"
        ).first()
        ref = f"browser-pilot-{task.pk}-{next(PILOTS)}"
        site = waiting.sites[0]
        assert pilot.post("/api/v1/pilots/", {"reference": ref, "site": site}).status_code == 201
        r = pilot.post(
            "/api/v1/match/",
            {
                "site": site,
                "setup": task.setup,
                "cpu_time": 10**6,
                "owner_group": "lhcb_mc",
                "pilot_reference": ref,
            },
            format="json",
        )
        assert r.status_code == 200, r.content
        job_id = r.data["id"]
        for status in ("running", outcome):
            r = pilot.post(
                f"/api/v1/jobs/{job_id}/status/",
                {"status": status, "pilot_reference": ref},
                format="json",
            )
            assert r.status_code == 200, r.content
        done.append(job_id)
    return done


def broker(task):
    from core.cycles import run_cycle

    assert run_cycle("task_brokerage").status == "success"
    assert run_cycle("job_brokerage").status == "success"
    task.refresh_from_db()
    assert task.status == "running", task.status_reason


def test_a_tasks_page_reaches_its_final_state_with_its_counts(page, panda_world):
    from core.cycles import run_cycle

    page.login("erin", demo.USER_PASSWORD)
    task = submit_task_in_the_form(page, "browser.final", 3)
    broker(task)
    run_jobs(task, ["finished", "finished"])
    run_cycle("task_completion")
    page.goto(f"/brokerage/tasks/{task.pk}/")
    jobs = page.page.locator("#task-jobs")
    assert "2/3 ended" in jobs.inner_text()
    assert jobs.locator("a", has_text="2 finished").count() == 1
    assert page.page.locator("h1 .status").inner_text() == "running"

    run_jobs(task, ["failed"])
    run_cycle("task_completion")
    page.page.reload()
    assert page.page.locator("h1 .status").inner_text() == "finished"
    jobs = page.page.locator("#task-jobs")
    assert "3/3 ended" in jobs.inner_text()
    assert jobs.locator("a", has_text="2 finished").count() == 1
    assert jobs.locator("a", has_text="1 failed").count() == 1
    width = page.page.locator("#task-jobs .progress .ok").evaluate("e => e.offsetWidth")
    assert width > 0
    page.screenshot("task-final")
    # The task list says the same.
    page.goto("/brokerage/tasks/?status=finished")
    row = page.page.locator("tr", has_text="browser.final")
    assert "3/3 ended" in row.inner_text() and "1 failed" in row.inner_text()


def test_from_a_task_to_its_failed_jobs_to_a_job_and_back(page, panda_world):
    page.login("erin", demo.USER_PASSWORD)
    task = submit_task_in_the_form(page, "browser.links", 2)
    broker(task)
    finished, failed = run_jobs(task, ["finished", "failed"])
    page.goto(f"/brokerage/tasks/{task.pk}/")
    page.page.click("#task-jobs a:has-text('1 failed')")
    page.page.wait_for_url(re.compile(rf"/jobs/\?task={task.pk}&status=failed$"))
    listed = page.page.locator("tbody tr a[href^='/jobs/']")
    assert listed.count() == 1 and listed.inner_text() == str(failed)
    listed.click()
    page.page.wait_for_url(f"**/jobs/{failed}/")
    page.page.click(f"a[href='/brokerage/tasks/{task.pk}/']:has-text('Task {task.pk}')")
    page.page.wait_for_url(f"**/brokerage/tasks/{task.pk}/")
    assert page.page.locator("h1").inner_text().startswith(f"Task {task.pk}")
    # All its jobs, from the job's page: the finished one is among them.
    page.goto(f"/jobs/{failed}/")
    page.page.click("a:has-text('its jobs')")
    page.page.wait_for_url(re.compile(rf"/jobs/\?task={task.pk}$"))
    shown = page.page.locator("tbody tr a[href^='/jobs/']").all_inner_texts()
    assert sorted(shown) == sorted([str(finished), str(failed)])


def test_the_trace_of_a_throttled_analysis_run_opens_from_the_home_page(page, panda_world):
    from brokerage.models import BrokerageRun, Task
    from core import gdpconfig
    from core.cycles import run_cycle
    from matcher import services as job_services
    from matcher.models import Job
    from shares.models import GridGroup, User

    alice = User.objects.get(username="alice")
    group = GridGroup.objects.get(name="lhcb_user")
    running = job_services.submit_jobs(
        alice, [{"owner_group": group, "setup": "Production", "cpu_time": 100}] * 3
    )
    Job.objects.filter(pk__in=[j.pk for j in running]).update(status="running")
    rollups.rebuild()  # the shortcut passed the writer that keeps the job counts
    gdpconfig.set_value("CAP_RUNNING_USER_JOBS", 2)

    page.login("alice", demo.USER_PASSWORD)
    page.goto("/brokerage/tasks/submit/")
    assert page.page.input_value("#id_kind") == "analysis"  # lhcb_user: no production property
    page.page.fill("#id_name", "user.alice.throttled")
    page.page.fill("#id_n_jobs", "2")
    page.page.click("button[type=submit]")
    page.page.wait_for_url("**/brokerage/tasks/*/")
    task = Task.objects.get(name="user.alice.throttled")
    assert run_cycle("analysis_brokerage").status == "success"
    run = BrokerageRun.objects.get(task=task)
    assert run.outcome == "throttled"

    page.goto("/")
    page.page.click(f"a[href='/brokerage/tasks/{task.pk}/?run={run.pk}#trace']")
    page.page.wait_for_url(f"**/brokerage/tasks/{task.pk}/?run={run.pk}#trace")
    held = page.page.locator("#throttle")
    assert "running_jobs" in held.inner_text() and "CAP_RUNNING_USER_JOBS" in held.inner_text()
    page.screenshot("task-throttled-trace")
