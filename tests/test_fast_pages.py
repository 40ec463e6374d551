"""Pages that load fast: the plotly.js the pages fetch is the basic bundle (bar, pie and scatter,
the version the python plotly package writes figures for), every figure placed on a page is one
it draws, and the home page's queries read indexes rather than whole tables: their number does
not grow with the pilots, the cycle runs or the job history."""

import json
import re
from datetime import timedelta

import plotly.graph_objects as go
import plotly.offline
import pytest
from django.contrib.staticfiles import finders
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core import clock
from core.cycle_runs import latest_runs
from core.models import CycleRun
from matcher.models import JobStatusHistory
from timeouts.models import TimeoutAction
from web.core.charts import to_html
from web.core.plotly_bundle import BUNDLE, TRACE_TYPES
from web.matcher import dashboard

pytestmark = pytest.mark.django_db


def _figure(html: str) -> dict:
    spec = re.search(r'<script type="application/json" data-chart="[^"]+">(.*)</script>', html)
    assert spec
    return json.loads(spec.group(1))


def test_the_served_plotly_bundle_holds_the_bar_pie_and_scatter_traces_only():
    path = finders.find(BUNDLE)
    assert path, f"{BUNDLE} is not among the static files"
    text = open(path, encoding="utf-8").read()
    traces = set(re.findall(r'moduleType:"trace",name:"([a-z0-9]+)"', text))
    assert traces == TRACE_TYPES == {"bar", "pie", "scatter"}
    # The plotly.js the python package writes its figures' JSON for.
    version = plotly.offline.get_plotlyjs_version()
    assert f"plotly.js (basic - minified) v{version}\n" in text[:200]
    assert len(text) < 1_500_000  # the full bundle is 4.8 MB


def test_the_pages_fetch_the_basic_bundle_and_not_the_python_package_s_full_one(client, users):
    client.force_login(users["admin"])
    html = client.get("/").content.decode()
    assert 'data-plotly="/static/vendor/plotly-basic.min.js"' in html
    assert finders.find("vendor/plotly.min.js") is None  # the full bundle is not served


def test_a_histogram_is_placed_on_a_page_as_the_bars_of_its_bins():
    fig = go.Figure(
        go.Histogram(x=[0.1, 0.2, 0.7, 2.6], xbins={"size": 0.5}, name="sent", marker_color="red")
    )
    fig.add_trace(go.Scatter(x=[1, 2], y=[3, 4], name="line"))
    spec = _figure(to_html(fig))
    bars, line = spec["data"]
    assert line["type"] == "scatter"
    assert bars["type"] == "bar" and bars["name"] == "sent" and bars["marker"]["color"] == "red"
    assert bars["x"] == [0.25, 0.75, 2.75] and bars["y"] == [2, 1, 1] and bars["width"] == 0.5
    # The template keeps only what the bundle draws.
    assert set(spec["layout"]["template"]["data"]) <= TRACE_TYPES


def test_a_trace_type_the_bundle_cannot_draw_is_refused_when_the_figure_is_placed():
    with pytest.raises(ValueError, match=r"heatmap: not in vendor/plotly-basic\.min\.js"):
        to_html(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]])))


def _runs(kind: str, n: int, status: str = "success", start=None) -> list[CycleRun]:
    start = start or clock.now() - timedelta(days=2)
    return CycleRun.objects.bulk_create(
        CycleRun(kind=kind, started=start + timedelta(minutes=i), status=status) for i in range(n)
    )


def test_the_latest_run_of_each_kind_and_its_latest_success_are_found():
    _runs("director", 5)
    failed = _runs("director", 1, "failed", start=clock.now())[0]
    usage = _runs("usage_sampling", 3)[-1]
    good = CycleRun.objects.filter(kind="director", status="success").latest("started")
    assert [(r.kind, r.pk) for r in latest_runs()] == [
        ("director", failed.pk),
        ("usage_sampling", usage.pk),
    ]
    assert [r.pk for r in latest_runs(["director"], "success")] == [good.pk]
    assert latest_runs(["accounting"]) == []
    assert [r.kind for r in dashboard.last_cycle_runs()] == ["director", "usage_sampling"]


def test_the_home_page_lists_the_latest_timeouts_of_the_jobs_the_user_may_see(users, submit):
    alices, bobs = submit("alice"), submit("bob")
    now = clock.now()
    for i, job in enumerate((alices, bobs, alices)):
        TimeoutAction.objects.create(
            at=now + timedelta(minutes=i),
            rule="sent",
            job=job,
            from_status="matched",
            to_status="activated",
            reason=f"timeout: sent 30 min #{i}",
        )
    mine = dashboard.recent_timeouts(users["alice"])
    assert [a.reason for a in mine] == ["timeout: sent 30 min #2", "timeout: sent 30 min #0"]
    assert len(dashboard.recent_timeouts(users["admin"])) == 3
    assert len(dashboard.recent_timeouts(users["admin"], limit=2)) == 2


def _home_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/").status_code == 200
    return len(queries)


def test_the_home_page_s_queries_do_not_grow_with_pilots_cycle_runs_or_job_history(
    client, users, submit
):
    from pilots.models import Pilot
    from simulation import demo

    job = submit("alice")
    demo.first_pilots()
    client.force_login(users["admin"])
    _runs("director", 2)
    client.get("/")  # the caches of the first request
    before = _home_queries(client)
    _runs("director", 50)
    _runs("usage_sampling", 50)
    pilot = Pilot.objects.first()
    for i in range(40):
        pilot.pk, pilot.reference, pilot.jobs_done = None, f"{pilot.reference}-{i}", i
        pilot.save()
    JobStatusHistory.objects.bulk_create(
        JobStatusHistory(job=job, at=clock.now(), from_status="a", to_status="b", reason="x")
        for _ in range(50)
    )
    assert _home_queries(client) == before
