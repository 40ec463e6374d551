"""The matcher's Plotly figures: plain data in, figures out; `to_html` places one on a page."""

import plotly.graph_objects as go

# The shared layout, palette and `to_html` are config's; named here too for the apps that
# draw on them through the matcher's charts.
from config.charts import PALETTE as PALETTE
from config.charts import layout as _layout
from config.charts import to_html as to_html

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


def director_figure(rows: list[dict]) -> go.Figure:
    """Pilots submitted per director cycle, stacked per TaskQueue (the busiest ones; the rest
    as "other")."""
    totals: dict[int, int] = {}
    for r in rows:
        totals[r["task_queue_id"]] = totals.get(r["task_queue_id"], 0) + r["submitted"]
    top = sorted(totals, key=totals.get, reverse=True)[:8]
    runs = sorted({r["at"] for r in rows})
    series: dict[str, dict] = {}
    for r in rows:
        name = f"TQ {r['task_queue_id']}" if r["task_queue_id"] in top else "other"
        series.setdefault(name, {})
        series[name][r["at"]] = series[name].get(r["at"], 0) + r["submitted"]
    fig = go.Figure()
    for i, (name, by_run) in enumerate(sorted(series.items())):
        fig.add_trace(
            go.Bar(
                x=runs,
                y=[by_run.get(t, 0) for t in runs],
                name=name,
                marker_color=PALETTE[i % len(PALETTE)] if name != "other" else "#9ca3af",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title="pilots submitted")
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
                mode="lines",
                line={"color": STATUS_COLOURS.get(state, "#a855f7")},
            )
        )
    fig.update_yaxes(title="jobs", rangemode="tozero")
    return _layout(fig)


def pilots_per_site_figure(rows: list[dict]) -> go.Figure:
    """Pilots per site, stacked by status."""
    sites = sorted({r["site"] or "—" for r in rows})
    statuses = [s for s in rows[0]["counts"]] if rows else []
    fig = go.Figure()
    for i, status in enumerate(statuses):
        per_site = {site: 0 for site in sites}
        for r in rows:
            per_site[r["site"] or "—"] += r["counts"].get(status, 0)
        if any(per_site.values()):
            fig.add_trace(
                go.Bar(
                    name=status,
                    x=sites,
                    y=[per_site[s] for s in sites],
                    marker_color=PALETTE[i % len(PALETTE)],
                )
            )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title="pilots")
    return _layout(fig)
