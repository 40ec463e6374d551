"""The matcher's Plotly figures: plain data in, figures out; `to_html` places one on a page."""

import plotly.graph_objects as go

# The shared layout, palette and `to_html` are config's; named here too for the apps that
# draw on them through the matcher's charts.
from web.core import chart_style as style
from web.core.charts import PALETTE as PALETTE
from web.core.charts import layout as _layout
from web.core.charts import to_html as to_html

# One colour per job state on every chart (web.core.chart_style).
STATUS_COLOURS = style.JOB_STATE_COLOURS


def jobs_by_status_figure(counts: dict[str, int]) -> go.Figure:
    statuses = list(counts)
    fig = go.Figure(
        go.Bar(
            x=statuses,
            y=[counts[s] for s in statuses],
            marker_color=[style.colour(STATUS_COLOURS, s) for s in statuses],
        )
    )
    fig.update_yaxes(title="jobs")
    style.count_axis(fig)
    return _layout(fig)


def jobs_by_priority_figure(rows: list[dict]) -> go.Figure:
    fig = go.Figure(
        go.Bar(
            x=[r["user_priority"] for r in rows],
            y=[r["jobs"] for r in rows],
            marker_color=style.colour(STATUS_COLOURS, "activated"),
        )
    )
    fig.update_xaxes(title="UserPriority", dtick=1, tickformat=",d", hoverformat=",d")
    fig.update_yaxes(title="waiting jobs")
    style.count_axis(fig)
    return _layout(fig)


def states_over_time_figure(history: dict[str, tuple[list, list]]) -> go.Figure:
    """Jobs per live state over time (the usage-sampling cycle's samples)."""
    fig = go.Figure()
    for state, (xs, ys) in history.items():
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                name=state,
                mode="lines" if len(xs) > 1 else "markers",  # one sample: a line of no length
                line={"color": style.colour(STATUS_COLOURS, state)},
            )
        )
    fig.update_yaxes(title="jobs", rangemode="tozero")
    style.count_axis(fig, stacked=False)
    return _layout(fig)
