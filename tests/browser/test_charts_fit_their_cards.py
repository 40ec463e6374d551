"""Every chart fits its card, at a narrow and a wide window: the figure, its plotted area, its
tick labels, axis titles and legend lie inside the card around it; the axes read: the plotted
area has half the chart's width at least, no two x tick labels overlap (as drawn, rotated or
not), and no time axis is ticked in fractions of a second (once, at 1400 px, the charts
overflowed and the share chart's date labels ran into each other). Each page is loaded at the
width it is checked at (as a user opens it), and once more after the window is made narrower
(plotly's responsive redraw)."""

import random
import re

import pytest

from matcher import bulk
from matcher.services import rollups
from simulation import demo
from simulation import demo as pilot_demo

pytestmark = pytest.mark.browser

WIDTHS = (1024, 1600)
TOLERANCE = 1.5  # px: sub-pixel rounding of borders and text boxes
SUB_SECOND = re.compile(r"\d:\d\d\.\d")  # 06:10:27.7025: a time axis a few ms long
READABLE = 0.5  # of the chart's width, at least, for the plotted area (not for the legend)

# Each chart's boxes, in page pixels, and the box of the card that holds it.
MEASURE = """
() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((plot) => {
  const box = (el) => {
    const r = el.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width,
            height: r.height};
  };
  const all = (selector) => Array.from(plot.querySelectorAll(selector)).filter((el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && (el.tagName !== 'text' || el.textContent.trim());
  });
  const card = plot.closest('.card');
  const chart = plot.closest('.chart');
  return {
    name: (chart && chart.id) || (card && card.querySelector('h2, h3')
      ? card.querySelector('h2, h3').textContent.trim() : plot.id),
    card: card ? box(card) : null,
    slot: box(chart || plot.parentElement),
    parts: {
      'figure': all('svg.main-svg').map(box),
      'plotted area': all('.draglayer .nsewdrag').map(box),
      'x tick label': all('.xtick text').map(box),
      'y tick label': all('.ytick text').map(box),
      'axis title': all('.g-xtitle text, .g-ytitle text').map(box),
      'legend': all('g.legend').map(box),
    },
    // Each line of each x tick label as the four corners it is drawn at (labels may be
    // rotated: their page-aligned boxes overlap where the text does not).
    xticks: all('.xtick text').flatMap((text) => {
      const lines = text.querySelectorAll('tspan.line');
      return (lines.length ? Array.from(lines) : [text]).map((el) => {
        const b = el.getBBox();
        const m = el.getScreenCTM();
        const at = (x, y) => ({x: m.a * x + m.c * y + m.e, y: m.b * x + m.d * y + m.f});
        return {
          text: el.textContent,
          corners: [at(b.x, b.y), at(b.x + b.width, b.y), at(b.x + b.width, b.y + b.height),
                    at(b.x, b.y + b.height)],
        };
      }).filter((line) => line.text.trim());
    }),
  };
})
"""


def _outside(part: dict, card: dict) -> bool:
    return (
        part["left"] < card["left"] - TOLERANCE
        or part["right"] > card["right"] + TOLERANCE
        or part["top"] < card["top"] - TOLERANCE
        or part["bottom"] > card["bottom"] + TOLERANCE
    )


def _overlap(a: list[dict], b: list[dict]) -> bool:
    """Whether two convex quadrilaterals overlap by more than TOLERANCE (separating axes)."""
    for quad in (a, b):
        for i in range(4):
            p, q = quad[i], quad[(i + 1) % 4]
            nx, ny = q["y"] - p["y"], p["x"] - q["x"]
            norm = (nx * nx + ny * ny) ** 0.5 or 1.0
            pa = [(c["x"] * nx + c["y"] * ny) / norm for c in a]
            pb = [(c["x"] * nx + c["y"] * ny) / norm for c in b]
            if min(max(pa), max(pb)) - max(min(pa), min(pb)) <= TOLERANCE:
                return False
    return True


def problems_of(charts: list[dict], where: str) -> list[str]:
    found = []
    for chart in charts:
        name, card = f"{where} {chart['name']!r}", chart["card"]
        if card is None:
            found.append(f"{name}: no .card around the chart")
            continue
        for what, parts in chart["parts"].items():
            for part in parts:
                if _outside(part, card):
                    found.append(
                        f"{name}: {what} [{part['left']:.0f}, {part['right']:.0f}] x "
                        f"[{part['top']:.0f}, {part['bottom']:.0f}] outside its card "
                        f"[{card['left']:.0f}, {card['right']:.0f}] x "
                        f"[{card['top']:.0f}, {card['bottom']:.0f}]"
                    )
        areas = chart["parts"]["plotted area"]
        if not areas:
            found.append(f"{name}: no plotted area drawn")
        elif sum(a["width"] for a in areas) < READABLE * chart["slot"]["width"]:
            found.append(
                f"{name}: plotted area {sum(a['width'] for a in areas):.0f} px wide, "
                f"less than {READABLE:.0%} of the chart's {chart['slot']['width']:.0f} px"
            )
        ticks = chart["xticks"]
        for tick in ticks:
            if SUB_SECOND.search(tick["text"]):
                found.append(f"{name}: x tick label {tick['text']!r} ticks fractions of a second")
        for i, a in enumerate(ticks):
            for b in ticks[i + 1 :]:
                if _overlap(a["corners"], b["corners"]):
                    found.append(f"{name}: x tick labels {a['text']!r} and {b['text']!r} overlap")
    return found


def charts_on(page, path: str, width: int) -> list[dict]:
    page.page.set_viewport_size({"width": width, "height": 900})
    assert page.goto(path).status == 200, path
    expected = page.page.locator("script[data-chart]").count()
    assert expected >= 1, f"{path}: no chart on the page"
    page.draw_charts()  # each is drawn when it comes near the view
    page.page.wait_for_function(
        "n => document.querySelectorAll('.js-plotly-plot .main-svg .nsewdrag').length >= n",
        arg=expected,
    )
    page.page.wait_for_timeout(300)  # plotly's own responsive redraws, if any
    charts = page.page.evaluate(MEASURE)
    assert len(charts) == expected, path
    return charts


@pytest.fixture
def charted(transactional_db):
    """A grid with something in every chart: jobs, pilots, one usage sample (more with
    hours_later), a brokered production task, an analysis share, a negotiator cycle and an
    advertised site."""
    from brokerage.models import GlobalShare
    from brokerage.services.production import job_brokerage, task_brokerage
    from brokerage.services.submission import submit_task
    from brokerage.topology_import import import_topology
    from classads import semantics
    from classads import services as classads
    from classads.models import SiteAd
    from core import clock
    from core.cycles import run_cycle
    from matcher.models import Job, TaskQueue
    from shares.models import GridGroup, User
    from simulation import panda_demo

    demo.create_world()
    bulk.load_jobs(300, seed=7, batch_size=100)
    pilot_demo.first_pilots()
    run_cycle("accounting")  # the running jobs, the accounting page's first bin
    # Some failures for the error summary's histogram (a test's shortcut past the pilots).
    failed = Job.objects.order_by("id").values_list("id", flat=True)[:6]
    Job.objects.filter(pk__in=list(failed)).update(
        status="failed", status_reason="exit code 3", site="LCG.CERN.ch", status_changed=clock.now()
    )
    rollups.rebuild()  # the shortcut passed the writer that keeps the job counts
    try:
        import_topology(panda_demo.topology())
        erin = User.objects.get(username="erin")
        group = GridGroup.objects.get(name="lhcb_mc")
        task = submit_task(erin, {"name": "charts.evgen", "owner_group": group, "n_jobs": 20}, [])
        task_brokerage(rng=random.Random(1))
        job_brokerage(rng=random.Random(1))
        GlobalShare.objects.create(name="User Analysis", target_pct=20.0)
        classads.advertise(semantics.SEED_SITE_AD)
        run_cycle("negotiator")

        def hours_later():
            # Samples over some hours: the time axes carry many times, as after a day's run.
            for _ in range(8):
                clock.advance(45 * 60)
                run_cycle("usage_sampling")
                run_cycle("priorities")
                run_cycle("negotiator")
                run_cycle("accounting")

        pages = {
            "home": "/",
            "shares": "/shares/",
            "director": "/pilots/director/",
            "taskqueue": f"/taskqueues/{TaskQueue.objects.order_by('id').first().pk}/",
            "brokerage-task": f"/brokerage/tasks/{task.pk}/",
            "brokerage-queues": "/brokerage/queues/",
            "brokerage-analysis": "/brokerage/analysis/",
            "timeouts": "/brokerage/timeouts/",
            "negotiation": "/classads/negotiation/",
            "site-ad": f"/classads/sites/{SiteAd.objects.order_by('id').first().pk}/",
            "errors": "/monitoring/errors/?hours=24",
            "accounting": "/accounting/?hours=24&group_by=site",
            "accounting-month": "/accounting/?hours=720&group_by=user",
        }
        yield pages, hours_later
    finally:
        clock.reset()


def test_every_chart_fits_its_card_with_readable_x_axes(page, charted):
    """First on a grid just started (one usage sample: the time axes are a moment long), then
    after some hours of samples."""
    pages, hours_later = charted
    page.login("admin", demo.ADMIN_PASSWORD)
    found = []
    for when in ("started", "hours later"):
        if when == "hours later":
            hours_later()
        for name, path in pages.items():
            for width in WIDTHS:
                found += problems_of(charts_on(page, path, width), f"{when}, {path} at {width} px:")
                page.screenshot(f"charts-{name}-{width}{'-later' if when != 'started' else ''}")
            # A window made narrower after the page drew: the charts follow it.
            page.page.set_viewport_size({"width": WIDTHS[0], "height": 900})
            page.page.wait_for_timeout(400)
            found += problems_of(
                page.page.evaluate(MEASURE), f"{when}, {path} resized to {WIDTHS[0]} px:"
            )
    assert found == [], "\n".join(found)
