"""The everyday job paths through the pages themselves: the job page's reschedule refusal, the
warning banner after submitting on the web form, the why-headline of a job no CE can take,
and the home page's health panel leading to the director's decisions."""

import random

import pytest

from matcher.models import Job, JobStatus
from matcher.services import rollups
from simulation import demo

pytestmark = pytest.mark.browser


@pytest.fixture
def world(transactional_db):
    demo.create_world()


def submit_on_the_form(page, **fields):
    """Fill the web form's fields (text inputs by id) and submit; returns the job's id."""
    page.goto("/jobs/submit/")
    form = page.page.locator("#job-form")
    form.locator("#id_cpu_time").fill(str(fields.pop("cpu_time", 600)))
    for name, value in fields.items():
        form.locator(f"#id_{name}").fill(value)
    form.locator("button[type=submit]").click()
    page.page.wait_for_selector("text=submitted.")
    return int(page.page.url.rstrip("/").rsplit("/", 1)[1])


def test_a_finished_job_offers_no_reschedule_and_its_page_says_why(page, world):
    from matcher import services
    from matcher.tests.test_job_actions import put_in_state
    from shares.models import User

    alice = User.objects.get(username="alice")

    def job_in(status):
        spec = {"owner_group": alice.grid_groups.get(), "setup": "LHCb-Production"}
        [job] = services.submit_jobs(alice, [{**spec, "cpu_time": 100}])
        return put_in_state(job, status)

    finished, failed, stale = job_in("finished"), job_in("failed"), job_in("failed")
    page.login("alice", demo.USER_PASSWORD)

    page.goto(f"/jobs/{finished.pk}/")
    assert page.page.locator("button", has_text="Reschedule").count() == 0
    refusal = page.page.locator("#reschedule-refused").inner_text()
    assert "it finished: rescheduling would run again work that succeeded" in refusal
    page.screenshot("job-finished-no-reschedule")

    page.goto(f"/jobs/{failed.pk}/")
    page.page.locator("button", has_text="Reschedule").click()
    page.page.wait_for_selector(f"text=Job {failed.pk} rescheduled.")
    assert Job.objects.get(pk=failed.pk).status == JobStatus.ACTIVATED

    # The page was opened while the job had failed; it finished before the click.
    page.goto(f"/jobs/{stale.pk}/")
    put_in_state(stale, JobStatus.FINISHED)
    page.page.locator("button", has_text="Reschedule").click()
    message = page.page.locator(".msg.error")
    message.wait_for()
    assert f"job {stale.pk} cannot be rescheduled: it finished" in message.inner_text()
    assert message.is_visible()
    assert Job.objects.get(pk=stale.pk).status == JobStatus.FINISHED
    page.screenshot("job-reschedule-refused")


def test_submitting_a_tag_typo_on_the_form_lands_on_a_warning_banner(page, world):
    page.login("alice", demo.USER_PASSWORD)
    page.goto("/jobs/submit/")
    assert "LHCb-Production, the grid's Setup" in page.page.locator("#job-form").inner_text()
    job_id = submit_on_the_form(page, tags="4Procesors")
    banner = page.page.locator("#job-warnings")
    assert banner.is_visible()
    assert "no active CE offers tag 4Procesors" in banner.inner_text()
    assert Job.objects.get(pk=job_id).status == JobStatus.ACTIVATED  # accepted all the same
    page.screenshot("job-warning-banner")


def test_the_why_headline_of_a_job_no_ce_can_take_names_what_it_lacks(page, world):
    page.login("alice", demo.USER_PASSWORD)
    job_id = submit_on_the_form(page, platforms="x86-64-el9")
    why = page.page.locator("#why")
    assert why.locator("h2").inner_text() == "Why is it not running yet?"
    headline = why.locator(".headline").inner_text()
    assert headline.startswith("No active computing element can take it: no active CE offers ")
    assert "platform x86-64-el9" in headline
    matching = why.locator(".why-part.blocking", has_text="Matching")
    assert matching.count() == 1 and "holds it back" in matching.inner_text()
    page.screenshot("job-why-no-ce")

    Job.objects.filter(pk=job_id).update(status=JobStatus.RUNNING, site="LCG.CERN.ch")
    rollups.rebuild()  # the shortcut passed the writer that keeps the job counts
    page.goto(f"/jobs/{job_id}/")
    assert page.page.locator("#why h2").inner_text() == "Where it runs"
    assert "Why is it not running" not in page.page.content()


def test_the_home_health_panel_leads_to_the_directors_reason_for_a_blocked_taskqueue(page, world):
    from core import gdpconfig
    from core.cycles import run_cycle

    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    page.login("alice", demo.USER_PASSWORD)
    job_id = submit_on_the_form(page, submit_pools="gridPool")
    tq = Job.objects.get(pk=job_id).task_queue_id
    run_cycle("director", rng=random.Random(4))

    page.goto("/")
    panel = page.page.locator("#health")
    assert panel.is_visible()
    alert = panel.locator(f"a[href='/pilots/director/?task_queue={tq}']")
    assert "gets no pilot: unknown submit pool 'gridPool'" in alert.inner_text()
    page.screenshot("home-health-panel")
    alert.click()
    page.page.wait_for_url(f"**/pilots/director/?task_queue={tq}")
    decisions = page.page.locator("#decisions")
    assert f"TQ {tq} in the last" in decisions.locator("h2").inner_text()
    assert "unknown submit pool 'gridPool'" in decisions.locator("table").inner_text()

    # The job's own page states the director's reason first.
    page.goto(f"/jobs/{job_id}/")
    headline = page.page.locator("#why .headline").inner_text()
    assert headline == "The director sends it no pilot: unknown submit pool 'gridPool'."
    page.screenshot("director-decisions-for-tq")
