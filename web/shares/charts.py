"""The fair-share figures: plain data in (web.shares.overview's histories), figures out. A group
has its colour of every page (web.core.chart_style.group_colours)."""

import plotly.graph_objects as go

from web.core import chart_style as style
from web.core.charts import layout


def share_figure(history: dict) -> go.Figure:
    """Achieved share per group over time (lines) against its expected share (a dashed line of
    the same colour, across the times sampled: a trace, not an annotation, so that no two
    groups' labels are written over each other)."""
    fig = go.Figure()
    names = sorted(set(history["achieved"]) | set(history["expected"]))
    colours = style.group_colours(names)
    times = [x for xs, _ys in history["achieved"].values() for x in xs]
    span = [min(times), max(times)] if times else []
    for name in names:
        colour = colours[name]
        if name in history["achieved"]:
            xs, ys = history["achieved"][name]
            fig.add_trace(
                go.Scatter(
                    x=xs, y=ys, name=name, legendgroup=name, line={"color": colour}, mode="lines"
                )
            )
        if name in history["expected"] and span:
            share = history["expected"][name]
            fig.add_trace(
                go.Scatter(
                    x=span,
                    y=[share, share],
                    name=f"{name} expected",
                    legendgroup=name,
                    showlegend=name not in history["achieved"],
                    mode="lines",
                    line={"color": colour, "dash": "dash"},
                )
            )
    fig.update_yaxes(title="share of running jobs (dashed: expected)", rangemode="tozero")
    style.axis_format(fig, "y", style.PERCENT)
    return layout(fig)


def corrections_figure(history: dict) -> go.Figure:
    """A line per group (its colour) or group/user (a colour no other line of the chart has)."""
    groups = style.group_colours(label for label in history if "/" not in label)
    colours = {**style.series_colours(history.keys() - groups, groups.values()), **groups}
    fig = go.Figure()
    for label, (xs, ys) in sorted(history.items()):
        dash = "dot" if "/" in label else None
        fig.add_trace(
            go.Scatter(x=xs, y=ys, name=label, line={"color": colours[label], "dash": dash})
        )
    fig.add_hline(y=1.0, line={"color": "#9ca3af", "dash": "dot"})
    fig.update_yaxes(title="correction factor", type="log")
    style.axis_format(fig, "y", {"tickformat": ",.2~f", "hoverformat": ",.3f"})
    return layout(fig)
