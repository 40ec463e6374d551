"""The Shares page says why a group is off its share, in Chromium: a group whose waiting jobs no
active CE can serve reads the sentence under its row, beside its figures."""

import pytest

from core.cycles import run_cycle
from matcher.models import JobStatus
from matcher.tests.test_job_actions import put_in_state
from simulation import demo

pytestmark = pytest.mark.browser


def test_staff_read_on_the_shares_page_why_lhcb_data_is_below_its_share(page, submit):
    for _ in range(3):  # CERN only, CPU segment 300,000 s: above every CERN CE's limit
        submit("dave", cpu_time=100000, sites=["LCG.CERN.ch"])
    running = [submit("alice", cpu_time=100) for _ in range(2)]
    submit("alice", cpu_time=100)
    for job in running:
        put_in_state(job, JobStatus.RUNNING, "p")
    run_cycle("usage_sampling")

    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/shares/")
    reason = page.page.locator("tr.reason-row[data-group=lhcb_data]")
    reason.wait_for(state="visible")
    assert reason.inner_text().strip() == (
        "Why lhcb_data is below its share: 100 % of its waiting jobs need more CPU time than "
        "any CE they may use offers."
    )
    row = page.page.locator("tr.group-row[data-group=lhcb_data]")
    assert row.locator("td[data-k=servable_jobs]").inner_text() == "0"
    assert row.locator("td[data-k=slots]").inner_text() == "0"
    page.screenshot("shares-why")


def test_the_shares_page_tells_why_a_small_group_starved_of_work_runs_nothing(page, submit):
    """lhcb_mc at 0.6 % of the share with jobs a CE can serve and nothing running (within 2
    points of its share): the director drew pilots for it that the CEs had no waiting slots
    for, and the page says so under its row, at 1280 px."""
    from datetime import timedelta

    from core import clock
    from pilots.models import DirectorDecision
    from shares.models import GridGroup

    running = [submit("alice", cpu_time=100) for _ in range(2)]
    submit("alice", cpu_time=100)
    erin = [submit("erin", cpu_time=100) for _ in range(4)]
    for job in running:
        put_in_state(job, JobStatus.RUNNING, "p")
    user_share = GridGroup.objects.get(name="lhcb_user").job_share
    GridGroup.objects.filter(name="lhcb_mc").update(job_share=user_share * 0.006)
    for run in (1, 2, 3):
        DirectorDecision.objects.create(
            cycle_run=run,
            at=clock.now() - timedelta(minutes=5 * run),
            task_queue_id=erin[0].task_queue_id,
            priority=0.1,
            jobs=4,
            cpu_time=500,
            lam=0.3,
            drawn=2,
            cap=4,
            waiting_pilots=0,
            submitted=0,
            skipped="CEs took 0 of 2 (no free waiting slots)",
        )
    run_cycle("usage_sampling")

    page.page.set_viewport_size({"width": 1280, "height": 900})
    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/shares/")
    reason = page.page.locator("tr.reason-row[data-group=lhcb_mc]")
    reason.wait_for(state="visible")
    assert reason.get_attribute("data-reason") == "ces_full"
    assert (
        reason.inner_text()
        .strip()
        .startswith(
            "Why lhcb_mc is below its share: the CEs had no free waiting slots for its pilots: the "
            "director drew 6 for its TaskQueues in the last hour and the CEs took 0"
        )
    )
    row = page.page.locator("tr.group-row[data-group=lhcb_mc]")
    assert row.locator("td[data-k=servable_jobs]").inner_text() == "4"
    # It starts within the 1280 px, under the group's row.
    line, above = reason.bounding_box(), row.bounding_box()
    assert line is not None and above is not None
    assert 0 <= line["x"] < 1280 and line["y"] >= above["y"] + above["height"] - 1
    page.screenshot("shares-why-small-group")
