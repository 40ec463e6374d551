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
