"""What operators of DIRAC and BigPanDA rely on, driven in a 1280 px window: the jobs list's
counts per state (a click filters the list), the header's quick search (a job id, a pilot
reference, a user name), the site mask (ban with a reason through the page's own form, see it
in the history, the director and the brokerage skip the site; allow it again), a task's states
chart and retry chain, and /healthz's verdict on Home."""

import pytest
from django.db import transaction

from brokerage import lifecycle
from brokerage.models import TaskJob
from brokerage.services import world as brokerage_world
from brokerage.services.submission import submit_task
from brokerage.topology_import import import_topology
from core import clock
from matcher import dispatcher, services
from matcher.models import Site, SiteMaskChange
from pilots.models import Pilot, PilotStatus
from shares.models import GridGroup, User
from simulation import demo, panda_demo

pytestmark = pytest.mark.browser

CERN = "LCG.CERN.ch"


@pytest.fixture
def wide(page):
    page.page.set_viewport_size({"width": 1280, "height": 900})
    return page


@pytest.fixture
def grid(transactional_db):
    """The demo world; alice's 3 jobs (one killed), bob's 2; a pilot of alice's."""
    demo.create_world()
    made = {}
    for username, n in (("alice", 3), ("bob", 2)):
        user = User.objects.get(username=username)
        spec = {"owner_group": user.grid_groups.get(), "setup": "LHCb-Production", "cpu_time": 100}
        made[username] = [
            j.pk
            for j in services.submit_jobs(
                user, [{**spec, "name": f"{username}-{i}"} for i in range(n)]
            )
        ]
    alice = User.objects.get(username="alice")
    services.kill_job(made["alice"][0], alice)
    now = clock.now()
    made["pilot"] = Pilot.objects.create(
        reference="https://ce503.cern.ch:9619/777.0", task_queue_id=1, submit_pool="gLite",
        owner_dn=alice.dn, owner_group="lhcb_user", site=CERN, ce="ce503.cern.ch",
        status=PilotStatus.RUNNING, submitted=now, status_changed=now, credential_user=alice,
    )  # fmt: skip
    return made


def listed_ids(page) -> list[int]:
    return [int(t) for t in page.page.locator("table tbody tr td:nth-child(2) a").all_inner_texts()]


def test_a_count_per_state_filters_the_jobs_list_when_clicked(wide, grid):
    wide.login("alice", demo.USER_PASSWORD)
    wide.goto("/jobs/")
    facets = wide.page.locator("#status-facets")
    assert facets.locator('[data-state="all"]').inner_text() == "all 3"
    assert facets.locator('[data-state="activated"]').inner_text() == "activated 2"
    facets.locator('[data-state="cancelled"]').click()
    wide.page.wait_for_url("**/jobs/?status=cancelled")
    assert listed_ids(wide) == [grid["alice"][0]]
    on = wide.page.locator("#status-facets a.on")
    assert on.get_attribute("data-state") == "cancelled"
    wide.screenshot("operator-facets-1280")
    wide.page.locator('#status-facets [data-state="all"]').click()
    wide.page.wait_for_url("**/jobs/?")
    assert sorted(listed_ids(wide)) == sorted(grid["alice"])  # none of bob's


# A search field keeps a place for its clear button beside the text, the placeholder's too.
CLEAR_BUTTON_PX = 16


def quick_search(page, text):
    box = page.page.locator("header #quick-search")
    assert box.is_visible()
    box.fill(text)
    box.press("Enter")
    page.page.wait_for_load_state("load")


def test_the_header_search_goes_to_a_job_a_pilot_and_a_user(wide, grid):
    wide.login("alice", demo.USER_PASSWORD)
    job = grid["alice"][1]
    quick_search(wide, str(job))
    wide.page.wait_for_url(f"**/jobs/{job}/")
    quick_search(wide, grid["pilot"].reference)
    wide.page.wait_for_url(f"**/pilots/{grid['pilot'].pk}/")
    quick_search(wide, "alice")
    wide.page.wait_for_url("**/shares/users/alice/")
    quick_search(wide, str(grid["bob"][0]))  # bob's job: not hers to see
    assert "Nothing found" in wide.page.locator("#search-nothing").inner_text()
    header = wide.page.locator("header.top").bounding_box()
    assert header["height"] < 100  # the box fits the header's row at 1280 px
    # ... and its placeholder fits the box, not cut to "job, task, pilot or use".
    room, needed = wide.page.locator("header #quick-search").evaluate(
        """el => {
            const style = getComputedStyle(el);
            const ctx = document.createElement("canvas").getContext("2d");
            ctx.font = style.font;
            const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
            return [el.clientWidth - padding, ctx.measureText(el.placeholder).width];
        }"""
    )
    assert needed + CLEAR_BUTTON_PX <= room, (needed, room)
    wide.screenshot("operator-search-1280")


def test_staff_ban_a_site_from_the_page_and_allow_it_again(wide, grid):
    import_topology(panda_demo.topology())
    site = Site.objects.get(name=CERN)
    wide.login("admin", demo.ADMIN_PASSWORD)
    wide.goto("/sites/")
    wide.page.click("#site-mask-link")
    wide.page.wait_for_url("**/sites/mask/")
    wide.page.select_option("#id_target", f"site:{site.pk}")
    wide.page.check('input[name="action"][value="ban"]')
    wide.page.fill("#id_reason", "downtime GGUS 4711")
    wide.page.click("#mask-form button[type=submit]")
    wide.page.wait_for_selector("#confirm")
    assert "Ban the site LCG.CERN.ch" in wide.page.locator("#confirm .question").inner_text()
    wide.page.click("#confirm button.danger")
    wide.page.wait_for_url("**/sites/mask/")
    row = wide.page.locator("#mask-history tbody tr, #mask-history tr").filter(has_text="GGUS 4711")
    assert "admin" in row.inner_text() and "ban" in row.inner_text()
    banned = wide.page.locator(f'#mask-status tr[data-site="{CERN}"] .status')
    assert banned.inner_text() == "banned"
    wide.screenshot("operator-site-mask-1280")

    # The director plans over no CE of the site; the brokerage's check removes its queues.
    assert CERN not in {ce.site.name for ce in dispatcher.active_ces()}
    queues = [q for q in brokerage_world.load_queues() if q.site.name == CERN]
    assert queues and all(q.masked == "site banned" for q in queues)

    wide.page.select_option("#id_target", f"site:{site.pk}")
    wide.page.check('input[name="action"][value="allow"]')
    wide.page.fill("#id_reason", "downtime over")
    wide.page.click("#mask-form button[type=submit]")
    wide.page.wait_for_selector("#mask-history >> text=downtime over")
    assert banned.inner_text() == "active"
    assert [c.action for c in SiteMaskChange.objects.all()] == ["allow", "ban"]
    assert CERN in {ce.site.name for ce in dispatcher.active_ces()}


def test_a_task_page_draws_its_states_and_links_its_retry_chain(wide, grid):
    erin = User.objects.get(username="erin")
    group = GridGroup.objects.get(name="lhcb_mc")
    task = submit_task(erin, {"name": "mc.simul", "owner_group": group, "n_jobs": 3}, [])
    chain = [TaskJob.objects.filter(task=task).order_by("job_id").first().job_id]
    services.kill_job(chain[0], erin)
    for _ in range(2):
        with transaction.atomic():
            chain.append(lifecycle.reassign([chain[-1]], 5, retried_by="erin")[chain[-1]][0])
    wide.login("erin", demo.USER_PASSWORD)
    wide.goto(f"/brokerage/tasks/{task.pk}/")
    wide.page.locator("#task-states").scroll_into_view_if_needed()
    wide.page.wait_for_selector("#task-states-chart .main-svg")  # plotly drew it
    legend = wide.page.locator("#task-states-chart .legendtext").evaluate_all(
        "texts => texts.map(t => t.textContent)"
    )
    assert {"defined", "cancelled"} <= set(legend)
    links = wide.page.locator("#retry-chains .retry-chain a").all_inner_texts()
    assert links == [f"job {pk}" for pk in chain]
    assert "→" in wide.page.locator("#retry-chains .retry-chain").inner_text()
    wide.screenshot("operator-task-page-1280")
    wide.page.locator("#retry-chains .retry-chain a").last.click()
    wide.page.wait_for_url(f"**/jobs/{chain[-1]}/")


def test_home_shows_the_verdict_of_healthz(wide, grid):
    wide.login("alice", demo.USER_PASSWORD)
    wide.expect_error = True  # /healthz may answer 503: the cluster is not running here
    status = wide.page.request.get(wide.base_url + "/healthz").status
    wide.expect_error = False
    wide.goto("/")
    verdict = wide.page.locator("#health-verdict").inner_text()
    assert f"/healthz answers {status}" in verdict
