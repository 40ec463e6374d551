"""The matcher's Plotly figures: plain data in, figures out; `to_html` places one on a page."""

import plotly.graph_objects as go

# The shared layout, palette and `to_html` are config's; named here too for the apps that
# draw on them through the matcher's charts.
from web.core.charts import PALETTE as PALETTE
from web.core.charts import layout as _layout
from web.core.charts import to_html as to_html

STATUS_COLOURS = {
    "activated": "#3b82f6",
    "sent": "#06b6d4",
    "starting": "#0ea5e9",
    "running": "#22c55e",
    "finished": "#15803d",
    "failed": "#dc2626",
    "cancelled": "#6b7280",
}


def jobs_by_status_figure(counts: dict[str, int]) -> go.Figure:
    statuses = list(counts)
    fig = go.Figure(
        go.Bar(
            x=statuses,
            y=[counts[s] for s in statuses],
            marker_color=[STATUS_COLOURS.get(s, "#a855f7") for s in statuses],
        )
    )
    fig.update_yaxes(title="jobs")
    return _layout(fig)


def jobs_by_priority_figure(rows: list[dict]) -> go.Figure:
    fig = go.Figure(
        go.Bar(
            x=[r["user_priority"] for r in rows],
            y=[r["jobs"] for r in rows],
            marker_color="#3b82f6",
        )
    )
    fig.update_xaxes(title="UserPriority", dtick=1)
    fig.update_yaxes(title="waiting jobs")
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
                line={"color": STATUS_COLOURS.get(state, "#a855f7")},
            )
        )
    fig.update_yaxes(title="jobs", rangemode="tozero")
    return _layout(fig)
