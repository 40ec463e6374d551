"""Pages that load fast: the home page's first load (a cold cache) brings plotly's basic bundle
and stays under 2 MB on the wire, and a chart is drawn only when it comes near the view
(static/js/gridwms.js). Sizes, not times: bench/page_load.py measures the times."""

import base64
import re
from pathlib import Path

import pytest

from core.cycles import run_cycle
from matcher import bulk
from simulation import demo

pytestmark = pytest.mark.browser

HOME_FIRST_LOAD_LIMIT = 2_000_000  # bytes
PLOTLY_BASIC = re.compile(r"/static/vendor/plotly-basic\.min(\.[0-9a-f]{12})?\.js$")
ROOT = Path(__file__).resolve().parents[2]
FIRST_CHART = "document.querySelector('.js-plotly-plot .main-svg') !== null"


@pytest.fixture
def grid(transactional_db):
    """The demo world with every chart of the home page: jobs by status, states over the day,
    shares, pilots per site."""
    demo.create_world()
    bulk.load_jobs(200, seed=7, batch_size=100)
    demo.first_pilots()
    run_cycle("usage_sampling")


def _first_load(page, path):
    """For `path` with an empty cache, until its first chart is drawn and the network is quiet:
    {URL: bytes on the wire (headers and bodies as encoded)}, and a function that gives the
    body of one of its URLs as the page read it (decoded)."""
    cdp = page.page.context.new_cdp_session(page.page)
    cdp.send("Network.enable")
    cdp.send("Network.clearBrowserCache")
    sizes: dict[str, int] = {}
    urls: dict[str, str] = {}
    cdp.on(
        "Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"])
    )
    cdp.on(
        "Network.loadingFinished",
        lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]),
    )
    page.goto(path)
    page.page.wait_for_function(FIRST_CHART)
    page.page.wait_for_load_state("networkidle")
    # Only the requests of this load: the page before it (where the login landed) may finish
    # one of its own after the listeners started.
    mine = [r for r in sizes if r in urls]
    ids = {urls[r]: r for r in mine}
    load = {url: sum(sizes[r] for r in mine if urls[r] == url) for url in ids}

    def body(url):
        answer = cdp.send("Network.getResponseBody", {"requestId": ids[url]})
        text = answer["body"]
        return base64.b64decode(text) if answer["base64Encoded"] else text.encode()

    return load, body


def test_the_home_page_s_first_load_transfers_under_2_mb_with_plotly_s_basic_bundle(page, grid):
    page.login("admin", demo.ADMIN_PASSWORD)
    load, body = _first_load(page, "/")
    total = sum(load.values())
    # Its name plain (DEBUG) or with the manifest's hash (collectstatic, as `make serve`).
    plotly = [u for u in load if "plotly" in u]
    assert len(plotly) == 1 and PLOTLY_BASIC.search(plotly[0]), plotly
    # The whole bundle as vendored, however compressed on the wire (whitenoise serves its
    # gzip or brotli copy), and counted in the total: the page's whole first load.
    assert body(plotly[0]) == (ROOT / "static/vendor/plotly-basic.min.js").read_bytes()
    assert 0 < load[plotly[0]] < total < HOME_FIRST_LOAD_LIMIT, (total, load)


def test_a_chart_below_the_fold_is_drawn_when_it_is_scrolled_into_view(page, grid):
    page.page.set_viewport_size({"width": 1280, "height": 500})
    page.login("admin", demo.ADMIN_PASSWORD)
    page.page.wait_for_function(FIRST_CHART)  # the charts in view are drawn
    page.page.wait_for_load_state("networkidle")
    charts = page.page.locator(".plotly-graph-div")
    last = charts.nth(charts.count() - 1)
    top = last.evaluate("el => el.getBoundingClientRect().top")
    assert top > 500 + 300 + 100, top  # well below the view and its 300 px margin
    assert last.locator(".main-svg").count() == 0  # not drawn while out of sight
    drawn_before = page.page.locator(".js-plotly-plot .main-svg").count()
    last.scroll_into_view_if_needed()
    last.locator(".main-svg").first.wait_for()
    assert page.page.locator(".js-plotly-plot .main-svg").count() > drawn_before
