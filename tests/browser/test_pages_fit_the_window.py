"""No page scrolls sideways at 1280 and 1600 px: every page the navigation bar links to (and the
tabs under it: brokerage, monitoring, ClassAds), and one page of each kind of object (a job, a
task, a pilot, a TaskQueue, a site, a nucleus, a user), seen by staff on a grid holding one of
each. Neither the page nor any card nor the box around a table is wider than the window gives
it (once, the PanDA queues table scrolled the page at 1280 px and the Home page's table of
cycles overflowed its card at 1366 and 1600 px). Django's admin and the API's Swagger page are
not the site's own pages and are left out."""

import re
from urllib.parse import urlsplit

import pytest

from simulation import demo
from tests import test_permissions_matrix as matrix

# django_db: the suite's test database is set up for this module (each test runs in a
# transaction of its own; the world the live server shows is committed before, by the module).
pytestmark = [pytest.mark.browser, pytest.mark.django_db]

WIDTHS = (1280, 1600)
NOT_OURS = ("/admin/", "/api/")

NAV_PAGES = [
    "/",
    "/jobs/",
    "/jobs/submit/",
    "/taskqueues/",
    "/taskqueues/match/",
    "/pilots/",
    "/pilots/director/",
    "/monitoring/jobs/",
    "/monitoring/held/",
    "/monitoring/pilots/",
    "/monitoring/errors/",
    "/accounting/",
    "/sites/",
    "/brokerage/tasks/",
    "/brokerage/tasks/submit/",
    "/brokerage/decisions/",
    "/brokerage/queues/",
    "/brokerage/nuclei/",
    "/brokerage/analysis/",
    "/brokerage/timeouts/",
    "/classads/",
    "/classads/jobs/",
    "/classads/negotiation/",
    "/shares/",
    "/simulation/",
    "/config/",
    "/config/cycles/",
    "/notifications/",
]
DETAIL_PAGES = [
    "/jobs/{alice_job}/",
    "/brokerage/tasks/{erin_task}/",
    "/pilots/{pilot}/",
    "/taskqueues/{alice_tq}/",
    "/sites/{site}/",
    "/brokerage/nuclei/{nucleus}/",
    "/shares/users/alice/",
]
# What scrolls sideways: the page, each card, each table's box (1 px for sub-pixel rounding).
OVERFLOW = """
() => {
  const page = document.documentElement;
  const found = [];
  if (page.scrollWidth > page.clientWidth) {
    found.push(`the page: ${page.scrollWidth} px wide in a ${page.clientWidth} px window`);
  }
  const boxes = new Set(document.querySelectorAll('.card'));
  document.querySelectorAll('table').forEach((t) => boxes.add(t.parentElement));
  boxes.forEach((box) => {
    if (box === document.body || box.scrollWidth <= box.clientWidth + 1) return;
    const title = box.querySelector('h1, h2, h3');
    const name = box.tagName.toLowerCase() + (box.id ? '#' + box.id : '') +
      (box.className ? '.' + String(box.className).trim().replace(/\\s+/g, '.') : '');
    found.push(`${name}${title ? ' "' + title.textContent.trim().slice(0, 60) + '"' : ''}: ` +
      `${box.scrollWidth} px of content in ${box.clientWidth} px`);
  });
  return found;
}
"""


@pytest.fixture(scope="module")
def staff_browsing(django_db_setup, django_db_blocker, browser):
    """One grid (the permissions matrix's: one of each object) and one signed-in staff browser
    for the whole module: the world is built once, committed, for a live server of the module's
    own (pytest-django's live_server flushes the database after every test), and flushed away
    after the last test."""
    from django.core.management import call_command
    from pytest_django.live_server_helper import LiveServer

    from tests.browser.conftest import WatchedPage

    with django_db_blocker.unblock():
        server = LiveServer("localhost")  # ALLOWED_HOSTS names localhost
        context = browser.new_context(viewport={"width": WIDTHS[0], "height": 900})
        try:
            ids = matrix._build()["ids"]
            watched = WatchedPage(context.new_page(), server.url)
            watched.login("admin", demo.ADMIN_PASSWORD)
            yield watched, ids
        finally:
            context.close()
            server.stop()
            call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def staff(staff_browsing, django_db_blocker):
    """The shared browser (the live server reaches the database during each test too); whatever
    went wrong while a test used it (a console error, a status of 400 or more) fails that test."""
    watched, ids = staff_browsing
    watched.problems.clear()
    with django_db_blocker.unblock():
        yield watched, ids
    assert watched.problems == [], "\n".join(watched.problems)


def _visit(page, path: str, width: int) -> list[str]:
    page.page.set_viewport_size({"width": width, "height": 900})
    response = page.goto(path)
    assert response.status == 200, (path, response.status)
    assert urlsplit(page.page.url).path == path, f"{path} led to {page.page.url}"
    page.page.evaluate("document.fonts.ready")
    return [f"{path} at {width} px: {problem}" for problem in page.page.evaluate(OVERFLOW)]


@pytest.mark.parametrize("path", NAV_PAGES + DETAIL_PAGES)
def test_the_page_and_its_cards_fit_the_window_at_1280_and_1600_px(staff, path):
    page, ids = staff
    concrete = re.sub(r"{(\w+)}", lambda m: str(ids[m.group(1)]), path)
    found = []
    for width in WIDTHS:
        found += _visit(page, concrete, width)
        page.screenshot(f"fit-{width}-" + (concrete.strip("/").replace("/", "-") or "home"))
    assert found == [], "\n".join(found)


def test_every_page_the_navigation_and_its_tabs_link_to_is_checked(staff):
    """The list above stays whole: each link of the top bar, and of the tabs on the pages it
    leads to, is one of the pages checked."""
    page, _ids = staff
    linked = set()
    for path in NAV_PAGES:
        page.goto(path)
        assert urlsplit(page.page.url).path == path, f"{path} led to {page.page.url}"
        hrefs = page.page.eval_on_selector_all(
            "header.top nav a, header.top .who a, p.subnav a, p.tabs a",
            "links => links.map((a) => a.getAttribute('href'))",
        )
        for href in hrefs:
            parts = urlsplit(href)
            if not parts.netloc and not parts.path.startswith(NOT_OURS):
                linked.add(parts.path)
    linked.discard("/shares/users/admin/")  # the signed-in user's page: a detail page below
    assert linked - set(NAV_PAGES) == set()
    assert len(linked) >= 20
