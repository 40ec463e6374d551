import pytest

from matcher import bulk
from simulation import demo
from simulation import demo as pilot_demo

pytestmark = pytest.mark.browser


@pytest.fixture
def grid(transactional_db):
    demo.create_world()
    bulk.load_jobs(300, seed=7, batch_size=100)
    pilot_demo.first_pilots()


PAGES = {
    "home": "/",
    "jobs": "/jobs/",
    "jobs-filtered": "/jobs/?status=activated&group=lhcb_user",
    "submit": "/jobs/submit/",
    "taskqueues": "/taskqueues/",
    "sites": "/sites/",
    "shares": "/shares/",
    "config": "/config/",
    "cycles": "/config/cycles/",
    "pilots": "/pilots/",
    "director": "/pilots/director/",
    "match": "/taskqueues/match/?site=LCG.CERN.ch&cpu_time=86400",
    "api-docs": "/api/docs/",
    "clock": "/simulation/",
    "brokerage-tasks-empty": "/brokerage/tasks/",
    "classads": "/classads/",
    "classads-negotiation": "/classads/negotiation/",
}


def test_staff_visit_every_page_without_errors_and_the_charts_draw(page, grid):
    from matcher.models import Job, TaskQueue

    page.login("admin", demo.ADMIN_PASSWORD)
    for name, path in PAGES.items():
        response = page.goto(path)
        assert response.status == 200, path
        page.screenshot(name)
    job = Job.objects.order_by("id").first()
    tq = TaskQueue.objects.order_by("id").first()
    page.goto(f"/jobs/{job.pk}/")
    assert page.page.locator("text=Status history").count() == 1
    page.screenshot("job-detail")
    page.goto(f"/taskqueues/{tq.pk}/")
    page.page.wait_for_selector(".js-plotly-plot .main-svg")
    page.screenshot("taskqueue-detail")
    page.goto("/")
    page.page.wait_for_selector(".js-plotly-plot .main-svg")
    bars = page.page.locator(".js-plotly-plot .bars path").count()
    assert bars >= 1  # the jobs-by-status chart drew its bars
    page.page.wait_for_selector("#states-chart .js-plotly-plot .main-svg")
    # One sample so far: each state's line is a single point (drawn, but of zero size).
    assert page.page.locator("#states-chart .scatterlayer .trace").count() >= 1
    page.draw_charts()  # those below the fold too
    page.page.wait_for_selector("#pilots-chart .js-plotly-plot .bars path")
    page.screenshot("home")
    page.goto("/pilots/director/")
    page.page.wait_for_selector(".js-plotly-plot .main-svg")  # pilots per cycle drew
    page.goto("/api/docs/")
    page.page.wait_for_selector(".swagger-ui .opblock", timeout=15000)


def test_a_user_submits_a_job_through_the_form_and_finds_it_in_the_list(page, grid):
    page.login("bob", demo.USER_PASSWORD)
    page.goto("/jobs/submit/")
    form = page.page.locator("#job-form")
    form.locator("#id_name").fill("browser-made-job")
    form.locator("#id_cpu_time").fill("777")
    form.locator("#id_user_priority").fill("4")
    form.locator("#id_sites").select_option(["LCG.CERN.ch", "LCG.PIC.es"])
    form.locator("#id_tags").fill("GPU")
    form.locator("button[type=submit]").click()
    page.page.wait_for_selector("text=submitted.")
    assert "browser-made-job" in page.page.content()
    page.goto("/jobs/?owner=bob")
    row = page.page.locator("tr", has_text="browser-made-job")
    assert row.count() == 1
    assert "activated" in row.inner_text()


def test_a_user_sees_the_form_error_next_to_the_bad_field(page, grid):
    page.login("alice", demo.USER_PASSWORD)
    page.goto("/jobs/submit/")
    page.page.locator("#jdl-form textarea").fill('CPUTime = 100; Site = {"Atlantis"};')
    page.page.locator("#jdl-form button[type=submit]").click()
    page.page.wait_for_selector("#jdl-form .error")
    assert "Site: Unknown site: Atlantis." in page.page.locator("#jdl-form").inner_text()


def test_staff_edit_a_gdpconfig_value_and_see_the_change_and_its_history(page, grid):
    from core import gdpconfig

    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/config/")
    block = page.page.locator("#param-MaxRescheduling")
    block.locator("input[name='MaxRescheduling-value']").fill("5")
    block.locator("input[name='MaxRescheduling-comment']").fill("from the browser")
    block.locator("button[type=submit]").click()
    page.page.wait_for_selector("text=MaxRescheduling is now 5.")
    block = page.page.locator("#param-MaxRescheduling")
    assert block.locator(".pvalue").inner_text() == "5"
    block.locator("summary").click()
    assert "from the browser" in block.inner_text()
    gdpconfig.invalidate()
    assert gdpconfig.get("MaxRescheduling") == 5
    block.locator("input[name='MaxRescheduling-value']").fill("lots")
    page.expect_error = True  # a refused value is answered 400, the page again with the error
    with page.page.expect_response(lambda r: r.url.endswith("/config/")) as answer:
        block.locator("button[type=submit]").click()
    assert answer.value.status == 400
    page.page.wait_for_selector("#param-MaxRescheduling .error")
    assert "expected an integer" in page.page.locator("#param-MaxRescheduling .error").inner_text()
    page.problems = [p for p in page.problems if "status of 400" not in p]
    page.screenshot("config-error")


def test_staff_edit_a_jobshare_in_the_admin_and_the_shares_page_shows_it(page, grid):
    from shares.models import GridGroup

    group = GridGroup.objects.get(name="lhcb_mc")
    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto(f"/admin/shares/gridgroup/{group.pk}/change/")
    page.page.fill("#id_job_share", "650")
    page.page.click("input[name=_save]")
    page.page.wait_for_selector("text=was changed successfully")
    page.goto("/shares/")
    row = page.page.locator("tr.group-row[data-group='lhcb_mc']")  # not its TaskQueues' rows
    assert "650" in row.inner_text()
    # Recorded like an edit on the Shares page, and so revertible.
    change = page.page.locator("#history tr", has_text="lhcb_mc")
    assert "300 → 650" in change.inner_text() and "in the admin" in change.inner_text()


def test_a_user_submits_a_production_task_and_reads_its_brokerage_trace(page, grid):
    from brokerage.models import Task
    from brokerage.topology_import import import_topology
    from core.cycles import run_cycle
    from simulation import panda_demo

    import_topology(panda_demo.topology())
    page.login("erin", demo.USER_PASSWORD)
    page.goto("/brokerage/tasks/submit/")
    page.page.fill("#id_name", "browser.evgen")
    page.page.fill("#id_owner_group", "lhcb_mc")
    page.page.fill("#id_processing_type", "evgen")
    page.page.fill("#id_architecture", "#&nvidia:vram>>1")
    page.page.click("button[type=submit]")
    refused = page.page.locator(".error", has_text="not a version number")
    refused.wait_for()  # the refused form, back from the server
    assert refused.count() == 1
    page.page.fill("#id_architecture", "")
    page.page.click("button[type=submit]")
    page.page.wait_for_url("**/brokerage/tasks/*/")
    task = Task.objects.get(name="browser.evgen")
    run_cycle("task_brokerage")
    run_cycle("job_brokerage")
    page.goto(f"/brokerage/tasks/{task.pk}/")
    page.draw_charts()  # below the fold: drawn only once scrolled near (static/js/gridwms.js)
    page.page.wait_for_selector("#removed-chart .js-plotly-plot .main-svg")
    page.page.wait_for_selector("#weights-chart .js-plotly-plot .bars path")
    assert page.page.locator("#candidates td", has_text="core_count").count() >= 1
    page.screenshot("brokerage-task")
    for name, path in {
        "brokerage-tasks": "/brokerage/tasks/",
        "brokerage-queues": "/brokerage/queues/",
        "brokerage-nuclei": "/brokerage/nuclei/",
        "brokerage-nucleus": f"/brokerage/nuclei/{Task.objects.get(pk=task.pk).nucleus_id}/",
    }.items():
        assert page.goto(path).status == 200, path
        page.screenshot(name)
    page.page.wait_for_selector("#links td")


def test_a_user_reads_the_analysis_page_with_its_stabilizer_chart(page, grid):
    from brokerage.models import GlobalShare
    from brokerage.topology_import import import_topology
    from simulation import panda_demo

    import_topology(panda_demo.topology())
    GlobalShare.objects.create(name="User Analysis", target_pct=20.0)
    page.login("alice", demo.USER_PASSWORD)
    assert page.goto("/brokerage/analysis/").status == 200
    page.page.wait_for_selector("#stabilizer-chart .js-plotly-plot .bars path")
    assert page.page.locator("#stabilizer td", has_text="ANALY_CERN").count() == 1
    page.screenshot("brokerage-analysis")


def test_staff_pause_and_speed_up_the_simulated_clock(page, grid):
    from core.models import SimulationClock

    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/simulation/")
    page.page.click("button[value=pause]")
    page.page.click("#confirm-dialog button[value=yes]")  # pausing asks first
    page.page.wait_for_selector("button[value=resume]")
    assert "paused" in page.page.locator("#sim-state").inner_text()
    page.page.click("button[value=resume]")
    page.page.fill("input[name=speed]", "300")
    page.page.click("button[value=speed]")
    assert page.page.locator("#sim-speed").inner_text() == "300"
    row = SimulationClock.objects.get(pk=1)
    assert row.running and row.speed == 300
    page.screenshot("clock")
