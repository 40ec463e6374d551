"""The error summary as an operator diagnoses failures with it, in a 1280 px window: the
window chosen with the page's own form, failures by error code and category, the site x error
view counting each site's failures per category, all within the page's width; an error code's
example job followed to the job page, which says why it failed and where it ran."""

import pytest

from matcher import dispatcher, services
from matcher.matching import Resource
from matcher.models import JobStatus
from shares.models import User
from simulation import demo

pytestmark = pytest.mark.browser


def _failed(user, site, **results):
    spec = {"owner_group": user.grid_groups.get(), "setup": "LHCb-Production", "cpu_time": 100}
    [job] = services.submit_jobs(user, [spec])
    taken = dispatcher.match_job(Resource(site=site, setup="any", cpu_time=10**6), f"p-{job.pk}")
    assert taken is not None and taken.job.id == job.pk
    services.report_job(job.pk, JobStatus.RUNNING, "started")
    return services.report_job(job.pk, JobStatus.FAILED, "failed", results=results)


@pytest.fixture
def failures(transactional_db):
    """alice: 2 stage-in and 1 memory failure at CERN; 1 stage-in, 1 payload at PIC."""
    demo.create_world()
    alice = User.objects.get(username="alice")
    for site, results in [
        ("LCG.CERN.ch", {"error_code": 1099, "hostname": "wn001.cern.ch"}),
        ("LCG.CERN.ch", {"error_code": 1099}),
        ("LCG.CERN.ch", {"error_code": 1212, "exit_code": 137}),
        ("LCG.PIC.es", {"error_code": 1151}),
        ("LCG.PIC.es", {"exit_code": 3}),
    ]:
        _failed(alice, site, **results)


def test_an_operator_reads_failures_by_code_and_site_at_1280_px(page, failures):
    page.page.set_viewport_size({"width": 1280, "height": 900})
    page.login("alice", demo.USER_PASSWORD)
    page.goto("/monitoring/errors/")
    page.page.fill('#error-window input[name="hours"]', "48")
    page.page.click('#error-window button[type="submit"]')
    page.page.wait_for_url("**/monitoring/errors/?hours=48")
    assert page.page.locator("#failed-total b").inner_text() == "5"

    codes = page.page.locator("#by-code tr", has_text="1099 Failed to transfer file in")
    assert codes.locator("td.num").inner_text() == "2"
    assert "stage-in" in page.page.locator("#by-category").inner_text()
    matrix = page.page.locator("#site-error-matrix")
    heads = [h.lower() for h in matrix.locator("thead th").all_inner_texts()]  # CSS uppercases
    assert heads == ["site", "stage-in", "payload", "memory", "all"]
    cern = matrix.locator('tr[data-site="LCG.CERN.ch"] td').all_inner_texts()
    pic = matrix.locator('tr[data-site="LCG.PIC.es"] td').all_inner_texts()
    assert (cern, pic) == (
        ["LCG.CERN.ch", "2", "0", "1", "3"],
        ["LCG.PIC.es", "1", "1", "0", "2"],
    )
    width = page.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, f"the page is {width} px wide"
    box = matrix.bounding_box()
    assert box["x"] + box["width"] <= 1280
    page.screenshot("error-summary-codes-1280")

    codes.locator("a", has_text="job").click()
    page.page.wait_for_url("**/jobs/*/")
    assert page.page.locator("#error-code").inner_text().startswith("1099 STAGEINFAILED")
    assert page.page.locator("#error-category").inner_text() == "stage-in"
    assert page.page.locator("#worker-hostname").inner_text() == "wn001.cern.ch"
    page.screenshot("job-failure-1280")
