from matcher import charts


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
