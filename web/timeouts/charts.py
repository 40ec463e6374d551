"""The timeouts page's figures: the time left before each rule fires, the actions per hour. A
kind of timeout has its colour of every chart (web.core.chart_style.TIMEOUT_COLOURS)."""

import plotly.graph_objects as go

from web.core import chart_style as style
from web.matcher.charts import _layout


def _rule_colour(rule: str) -> str:
    return style.colour(style.TIMEOUT_COLOURS, rule)


def time_left_figure(rows: list[tuple[str, float]], rules: list[str], titles: dict) -> go.Figure:
    """A histogram of the hours left before each rule fires, one colour per rule."""
    fig = go.Figure()
    for rule in rules:
        hours = [left / 3600 for r, left in rows if r == rule]
        if hours:
            fig.add_trace(
                go.Histogram(
                    x=hours,
                    name=titles.get(rule, rule),
                    marker_color=_rule_colour(rule),
                    xbins={"size": 0.5},
                )
            )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title="hours left", rangemode="tozero")
    style.axis_format(fig, "x", {"tickformat": ",.1~f", "hoverformat": ",.1f"})
    fig.update_yaxes(title="jobs")
    style.count_axis(fig, stacked=True)
    fig = _layout(fig)
    fig.update_layout(height=340)
    return fig


def actions_figure(rows: list[tuple], rules: list[str], titles: dict) -> go.Figure:
    """Jobs acted on per hour, stacked per rule. rows: (hour, rule, jobs)."""
    fig = go.Figure()
    for rule in rules:
        points = sorted((t, n) for t, r, n in rows if r == rule)
        if points:
            fig.add_trace(
                go.Bar(
                    x=[t for t, _ in points],
                    y=[n for _, n in points],
                    width=[3_240_000] * len(points),  # 0.9 h in ms: one bar per hour
                    name=titles.get(rule, rule),
                    marker_color=_rule_colour(rule),
                )
            )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title="jobs acted on")
    style.count_axis(fig, stacked=True)
    fig = _layout(fig)
    fig.update_layout(height=340)
    return fig
