"""Plotly figure builders: plain data in, figures out; `to_html` places one on a page."""

import uuid

import plotly.graph_objects as go
from django.utils.html import format_html
from django.utils.safestring import mark_safe

STATUS_COLOURS = {
    "activated": "#3b82f6",
    "sent": "#06b6d4",
    "starting": "#0ea5e9",
    "running": "#22c55e",
    "finished": "#15803d",
    "failed": "#dc2626",
    "cancelled": "#6b7280",
}


def _layout(fig: go.Figure) -> go.Figure:
    # No plot title: the card around the chart carries the heading.
    fig.update_layout(
        height=300,
        margin={"l": 50, "r": 20, "t": 10, "b": 40},
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
    )
    return fig


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


def to_html(fig: go.Figure) -> str:
    """A placeholder and the figure as JSON, no inline code: static/js/gridwms.js draws it once
    plotly has loaded (deferred, and only on pages that have a chart)."""
    chart_id = f"chart-{uuid.uuid4().hex[:12]}"
    # plotly's own encoder (dates, numpy); <, > and & escaped so that no text ends the script
    spec = fig.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return format_html(
        '<div style="height:{}px; width:100%;"><div id="{}" class="plotly-graph-div" '
        'style="height:100%; width:100%;"></div>'
        '<script type="application/json" data-chart="{}">{}</script></div>',
        fig.layout.height or 450,
        chart_id,
        chart_id,
        mark_safe(spec),  # JSON, its markup characters escaped above
    )


PALETTE = ["#2563eb", "#16a34a", "#dc2626", "#9333ea", "#ea580c", "#0891b2", "#ca8a04"]


def share_figure(history: dict) -> go.Figure:
    """Achieved share per group over time (lines) against its expected share (dashed)."""
    fig = go.Figure()
    names = sorted(set(history["achieved"]) | set(history["expected"]))
    for i, name in enumerate(names):
        colour = PALETTE[i % len(PALETTE)]
        if name in history["achieved"]:
            xs, ys = history["achieved"][name]
            fig.add_trace(go.Scatter(x=xs, y=ys, name=f"{name} achieved", line={"color": colour}))
        if name in history["expected"]:
            fig.add_hline(
                y=history["expected"][name],
                line={"color": colour, "dash": "dash"},
                annotation_text=f"{name} expected",
            )
    fig.update_yaxes(title="share of running jobs", tickformat=".0%", rangemode="tozero")
    return _layout(fig)


def corrections_figure(history: dict) -> go.Figure:
    fig = go.Figure()
    for i, (label, (xs, ys)) in enumerate(sorted(history.items())):
        fig.add_trace(go.Scatter(x=xs, y=ys, name=label, line={"color": PALETTE[i % len(PALETTE)]}))
    fig.add_hline(y=1.0, line={"color": "#9ca3af", "dash": "dot"})
    fig.update_yaxes(title="correction factor", type="log")
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
