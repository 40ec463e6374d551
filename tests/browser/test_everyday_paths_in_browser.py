"""The everyday paths, driven through the pages themselves in Chromium: editing a JobShare on
the Shares page, every destructive action asking first (and the message in view where the
user lands), pages at a phone's width, plotly only where a chart is, the API's documentation
with nothing from another host, and no dead link to a TaskQueue that emptied."""

import re

import pytest

from core import clock, gdpconfig
from matcher import bulk
from simulation import demo
from simulation import demo as pilot_demo

pytestmark = pytest.mark.browser


@pytest.fixture
def world(transactional_db):
    demo.create_world()


def _message(page, text):
    """The message shown after a redirect: it must be in the window, wherever the page lands."""
    msg = page.page.locator(".messages .msg", has_text=text)
    msg.wait_for()
    box = msg.bounding_box()
    height = page.page.viewport_size["height"]
    assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= height, box
    return msg


def _confirm(page, question, answer):
    dialog = page.page.locator("#confirm-dialog")
    dialog.wait_for(state="visible")
    assert question in dialog.inner_text()
    dialog.locator(f"button[value={answer}]").click()


def test_staff_edit_lhcb_mc_from_300_to_500_on_the_shares_page_see_it_recorded_and_revert_it(
    page, world
):
    from shares.models import GridGroup, GroupChange

    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/shares/")
    page.page.locator("tr.group-row[data-group=lhcb_mc] a.edit-link").click()
    row = page.page.locator("tr.edit-row[data-group=lhcb_mc]")  # its form, under its row
    assert float(row.locator("input[aria-label=JobShare]").input_value()) == 300
    row.locator("input[aria-label=JobShare]").fill("500")
    row.locator("input[aria-label=comment]").fill("more MC")
    row.locator("button", has_text="Save").click()
    _message(page, "lhcb_mc saved.")
    assert "500" in page.page.locator("tr.group-row[data-group=lhcb_mc] td.num").first.inner_text()
    assert GridGroup.objects.get(name="lhcb_mc").job_share == 500
    change = page.page.locator("#history tr", has_text="more MC")
    text = change.inner_text()
    assert "lhcb_mc" in text and "JobShare" in text and "300 → 500" in text
    assert "admin" in text
    page.screenshot("shares-edited")

    change.locator("button", has_text="Revert").click()
    _confirm(page, "Put lhcb_mc's JobShare back from 500 to 300?", "cancel")
    assert GridGroup.objects.get(name="lhcb_mc").job_share == 500  # cancelled: nothing done
    change.locator("button", has_text="Revert").click()
    _confirm(page, "Put lhcb_mc's JobShare back from 500 to 300?", "yes")
    _message(page, "lhcb_mc JobShare is back to 300.")
    assert GridGroup.objects.get(name="lhcb_mc").job_share == 300
    first = GroupChange.objects.order_by("id").first()
    assert f"revert of change {first.pk}" in page.page.locator("#history").inner_text()
    page.screenshot("shares-reverted")


def test_killing_a_job_asks_first_and_says_so_where_the_user_lands(page, world, submit):
    job = submit("alice", cpu_time=100)
    page.login("alice", demo.USER_PASSWORD)
    page.goto(f"/jobs/{job.pk}/")
    page.page.click("button:has-text('Kill')")
    _confirm(page, f"Kill job {job.pk}?", "cancel")
    job.refresh_from_db()
    assert job.status == "activated"
    page.page.click("button:has-text('Kill')")
    _confirm(page, f"Kill job {job.pk}?", "yes")
    _message(page, f"Job {job.pk} killed.")
    job.refresh_from_db()
    assert job.status == "cancelled"


def test_rolling_a_parameter_back_asks_first_and_the_message_is_in_view(page, world):
    from core.models import ParameterValue

    gdpconfig.set_value("MaxRescheduling", 4, comment="first")
    gdpconfig.set_value("MaxRescheduling", 8, comment="second")
    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/config/")
    block = page.page.locator("#param-MaxRescheduling")
    block.locator("summary").click()
    block.locator("button", has_text="Roll back to this").click()
    _confirm(page, "Roll MaxRescheduling back to version 1?", "cancel")
    assert ParameterValue.objects.filter(name="MaxRescheduling").count() == 2
    block.locator("button", has_text="Roll back to this").click()
    _confirm(page, "Roll MaxRescheduling back to version 1?", "yes")
    _message(page, "MaxRescheduling rolled back to version 1.")
    gdpconfig.invalidate()
    assert gdpconfig.get("MaxRescheduling") == 4


def test_pausing_the_simulated_clock_asks_first(page, world):
    from core.models import SimulationClock

    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/simulation/")
    page.page.click("button[value=pause]")
    _confirm(page, "Pause the simulated clock?", "cancel")
    assert SimulationClock.objects.get(pk=1).running
    page.page.click("button[value=pause]")
    _confirm(page, "Pause the simulated clock?", "yes")
    _message(page, "The simulated clock is paused")
    assert not SimulationClock.objects.get(pk=1).running


def test_without_scripts_a_destructive_action_asks_on_a_page_of_its_own(page, world, submit):
    from tests.browser.conftest import WatchedPage

    job = submit("alice", cpu_time=100)
    context = page.page.context.browser.new_context(java_script_enabled=False)
    try:
        plain = WatchedPage(context.new_page(), page.base_url)
        plain.login("alice", demo.USER_PASSWORD)
        plain.goto(f"/jobs/{job.pk}/")
        plain.page.click("button:has-text('Kill')")
        plain.page.wait_for_selector("#confirm")
        assert f"Kill job {job.pk}?" in plain.page.locator("#confirm").inner_text()
        job.refresh_from_db()
        assert job.status == "activated"
        plain.page.click("#confirm button:has-text('Kill')")
        plain.page.locator(".msg", has_text=f"Job {job.pk} killed.").wait_for()
        job.refresh_from_db()
        assert job.status == "cancelled"
        assert plain.problems == []
    finally:
        context.close()


@pytest.fixture
def grid(world):
    from brokerage.topology_import import import_topology
    from core.cycles import run_cycle
    from simulation import panda_demo

    bulk.load_jobs(200, seed=7, batch_size=100)
    pilot_demo.first_pilots()
    import_topology(panda_demo.topology())
    run_cycle("negotiator")


NARROW_PAGES = [
    "/",
    "/jobs/",
    "/jobs/submit/",
    "/taskqueues/",
    "/sites/",
    "/pilots/",
    "/pilots/director/",
    "/shares/",
    "/config/",
    "/config/cycles/",
    "/simulation/",
    "/brokerage/tasks/",
    "/brokerage/queues/",
    "/brokerage/nuclei/",
    "/brokerage/timeouts/",
    "/brokerage/analysis/",
    "/classads/",
    "/classads/jobs/",
    "/classads/negotiation/",
]


def test_at_a_phones_width_no_main_page_scrolls_sideways(page, grid):
    from matcher.models import Job, TaskQueue
    from pilots.models import Pilot

    page.page.set_viewport_size({"width": 390, "height": 844})
    page.login("admin", demo.ADMIN_PASSWORD)
    details = [
        f"/jobs/{Job.objects.order_by('id').first().pk}/",
        f"/taskqueues/{TaskQueue.objects.order_by('id').first().pk}/",
        f"/pilots/{Pilot.objects.order_by('id').first().pk}/",
    ]
    wide = {}
    for path in NARROW_PAGES + details:
        page.goto(path)
        width = page.page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            wide[path] = width
    assert wide == {}, wide
    page.goto("/")
    page.screenshot("home-390px")


def test_plotly_is_fetched_only_for_a_page_with_a_chart_and_the_charts_draw(page, grid):
    page.login("admin", demo.ADMIN_PASSWORD)  # lands on the home page, which has charts
    page.page.wait_for_selector(".js-plotly-plot .main-svg")  # drawn: plotly is fetched
    fetched = []
    page.page.on("request", lambda r: "plotly" in r.url and fetched.append(r.url))
    page.goto("/jobs/")
    page.goto("/sites/")
    assert fetched == []  # no chart, no plotly (its basic bundle is 1.2 MB)
    page.goto("/")
    page.page.wait_for_selector("#states-chart .js-plotly-plot .main-svg")
    page.draw_charts()  # those below the fold too
    page.page.wait_for_selector("#pilots-chart .js-plotly-plot .bars path")
    page.goto("/pilots/director/")
    page.page.wait_for_selector(".js-plotly-plot .main-svg")
    # The file itself, by its hashed name from the manifest under the production server.
    plotly = re.compile(r"/static/vendor/plotly-basic\.min(\.[0-9a-f]{12})?\.js$")
    assert fetched and all(plotly.search(u) for u in fetched)


def test_a_pilots_long_jdl_stays_inside_its_card(page, world):
    from pilots.models import Pilot

    now = clock.now()
    requirements = " || ".join(
        f'other.GlueCEUniqueID == "ce{i:03d}.example.org"' for i in range(40)
    )
    pilot = Pilot.objects.create(
        reference="sim://ce503.cern.ch/long",
        task_queue_id=1,
        owner_dn="/DC=ch/CN=pilot",
        owner_group="lhcb_pilot",
        submit_pool="gLite",
        requirements=f"[\n  Requirements = {requirements};\n]",
        status="Running",
        submitted=now,
        status_changed=now,
    )
    page.login("admin", demo.ADMIN_PASSWORD)
    page.expect_error = True  # the TaskQueue 1 link of this made-up pilot may point nowhere
    page.goto(f"/pilots/{pilot.pk}/")
    fits = page.page.evaluate(
        """() => { const pre = document.querySelector('#jdl pre');
                   const card = document.querySelector('#jdl').getBoundingClientRect();
                   return pre.scrollWidth <= pre.clientWidth
                          && pre.getBoundingClientRect().right <= card.right; }"""
    )
    assert fits


def test_the_api_documentation_loads_nothing_from_another_host(page, world):
    requested = []
    page.page.on("request", lambda r: requested.append(r.url))
    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/api/redoc/")
    logo = page.page.locator('img[alt="redocly logo"]')
    logo.wait_for(timeout=20000)
    assert page.page.evaluate("(img) => img.naturalWidth > 0", logo.element_handle())
    page.goto("/api/docs/")
    page.page.wait_for_selector(".swagger-ui .opblock", timeout=20000)
    local = (page.base_url, f"blob:{page.base_url}", "data:")  # what a page makes itself
    assert [u for u in requested if not u.startswith(local)] == []


def test_a_pilots_link_to_an_emptied_taskqueue_leads_to_its_page(page, world, submit):
    from matcher import services
    from pilots.models import Pilot

    job = submit("alice", cpu_time=100)
    now = clock.now()
    Pilot.objects.create(
        reference="sim://ce503.cern.ch/7",
        task_queue_id=job.task_queue_id,
        owner_dn="/DC=ch/CN=pilot",
        owner_group="lhcb_pilot",
        submit_pool="gLite",
        status="Done",
        submitted=now,
        status_changed=now,
    )
    services.kill_job(job.pk, job.owner)  # its TaskQueue empties and goes
    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/pilots/?status=Done")
    page.page.click(f"a:has-text('TQ {job.task_queue_id}')")
    page.page.wait_for_selector("h1:has-text('gone')")
    assert f"/jobs/{job.pk}/" in page.page.content()  # where its job went
