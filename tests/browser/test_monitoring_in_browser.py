"""The monitoring summaries as an operator uses them: the site × state
matrix, one of its cells followed to the jobs list it counts, and the error summary over a
time window, its histogram drawn."""

import pytest

from matcher import dispatcher, services
from matcher.matching import Resource
from matcher.models import JobStatus
from shares.models import User
from simulation import demo

pytestmark = pytest.mark.browser


def _ran(user, site, outcome, reason):
    spec = {"owner_group": user.grid_groups.get(), "setup": "LHCb-Production", "cpu_time": 100}
    [job] = services.submit_jobs(user, [spec])
    taken = dispatcher.match_job(Resource(site=site, setup="any", cpu_time=10**6), f"p-{job.pk}")
    assert taken is not None and taken.job.id == job.pk
    services.report_job(job.pk, JobStatus.RUNNING, "started")
    return services.report_job(job.pk, outcome, reason)


@pytest.fixture
def ended(transactional_db):
    """alice: 2 finished and 3 failed at CERN, 1 failed at PIC; bob: 1 failed at CERN."""
    demo.create_world()
    alice, bob = (User.objects.get(username=n) for n in ("alice", "bob"))
    for outcome, site, reason in [
        (JobStatus.FINISHED, "LCG.CERN.ch", "done"),
        (JobStatus.FINISHED, "LCG.CERN.ch", "done"),
        (JobStatus.FAILED, "LCG.CERN.ch", "exit code 3"),
        (JobStatus.FAILED, "LCG.CERN.ch", "exit code 3"),
        (JobStatus.FAILED, "LCG.CERN.ch", "segfault"),
        (JobStatus.FAILED, "LCG.PIC.es", "exit code 3"),
    ]:
        _ran(alice, site, outcome, reason)
    _ran(bob, "LCG.CERN.ch", JobStatus.FAILED, "bob's")


def test_a_matrix_cell_opens_the_jobs_it_counts_and_the_errors_show_a_window(page, ended):
    page.login("alice", demo.USER_PASSWORD)
    page.page.click('header nav a[href="/monitoring/jobs/"]')
    page.page.wait_for_selector("#job-summary")
    cern = page.page.locator('#job-summary tr[data-site="LCG.CERN.ch"]')
    assert "40.0 %" in cern.inner_text()  # 2 finished / (2 + 3 failed); bob's not counted
    cell = cern.locator('a[href="/jobs/?placed=LCG.CERN.ch&status=failed"]')
    assert cell.inner_text() == "3"
    page.screenshot("monitoring-job-summary")

    cell.click()
    page.page.wait_for_url("**/jobs/?placed=LCG.CERN.ch&status=failed")
    rows = page.page.locator("table tbody tr td:nth-child(2) a")
    assert rows.count() == 3
    assert set(page.page.locator("table tbody .status").all_inner_texts()) == {"failed"}

    page.goto("/monitoring/errors/?hours=24")
    assert page.page.locator("#failed-total b").inner_text() == "4"
    page.page.wait_for_selector(".js-plotly-plot .main-svg")  # the histogram is drawn
    reasons = page.page.locator("#by-reason").inner_text()
    assert "exit code 3" in reasons and "segfault" in reasons and "bob" not in reasons
    page.screenshot("monitoring-errors")
    page.page.click('#error-window a[data-hours="1"]')
    page.page.wait_for_url("**/monitoring/errors/?hours=1")
    assert page.page.locator("#failed-total").inner_text().endswith("last 1 h")
    assert page.page.locator("#failed-total b").inner_text() == "4"
    page.page.locator("#by-site a", has_text="LCG.CERN.ch").click()
    page.page.wait_for_url("**/jobs/?status=failed&since=*&placed=LCG.CERN.ch")
    assert page.page.locator("table tbody tr td:nth-child(2) a").count() == 3
    page.screenshot("monitoring-errors-list")
