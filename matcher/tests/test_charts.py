from web.matcher import charts


def test_the_status_chart_has_one_bar_per_status_with_its_count():
    fig = charts.jobs_by_status_figure({"activated": 5, "running": 2})
    assert list(fig.data[0].x) == ["activated", "running"]
    assert list(fig.data[0].y) == [5, 2]


def test_the_priority_chart_puts_user_priorities_on_x():
    fig = charts.jobs_by_priority_figure(
        [{"user_priority": 8, "jobs": 1}, {"user_priority": 1, "jobs": 4}]
    )
    assert list(fig.data[0].x) == [8, 1] and list(fig.data[0].y) == [1, 4]


def test_chart_html_does_not_inline_plotly_js():
    html = charts.to_html(charts.jobs_by_status_figure({"activated": 1}))
    assert "plotly-graph-div" in html and len(html) < 50_000


def test_a_chart_is_a_placeholder_and_its_figure_as_json_with_no_inline_code():
    import json
    import re

    fig = charts.jobs_by_status_figure({"</script><script>alert(1)</script>": 1})
    html = str(charts.to_html(fig))
    assert html.count("<script") == 1 and html.count("</script>") == 1  # the name is escaped
    assert "Plotly.newPlot" not in html  # drawn by static/js/gridwms.js once plotly is there
    _chart_id, spec = re.search(
        r'<div id="([^"]+)" class="plotly-graph-div".*<script type="application/json" '
        r'data-chart="\1">(.*)</script>',
        html,
    ).groups()
    assert json.loads(spec)["data"][0]["x"] == ["</script><script>alert(1)</script>"]
