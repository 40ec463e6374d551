"""The pilots' Plotly figures: the director's submissions per cycle, pilots per site."""

import plotly.graph_objects as go

from web.core import chart_style as style
from web.core.charts import layout as _layout
from web.core.charts import to_html as to_html


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
    colours = style.series_colours(n for n in series if n != "other")
    fig = go.Figure()
    for name, by_run in sorted(series.items()):
        fig.add_trace(
            go.Bar(
                x=runs,
                y=[by_run.get(t, 0) for t in runs],
                name=name,
                marker_color=colours.get(name, style.OTHER),
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title="pilots submitted")
    style.count_axis(fig, stacked=True)
    return _layout(fig)


def pilots_per_site_figure(rows: list[dict]) -> go.Figure:
    """Pilots per site, stacked by status."""
    sites = sorted({r["site"] or "—" for r in rows})
    statuses = [s for s in rows[0]["counts"]] if rows else []
    fig = go.Figure()
    for status in statuses:
        per_site = {site: 0 for site in sites}
        for r in rows:
            per_site[r["site"] or "—"] += r["counts"].get(status, 0)
        if any(per_site.values()):
            fig.add_trace(
                go.Bar(
                    name=status,
                    x=sites,
                    y=[per_site[s] for s in sites],
                    marker_color=style.colour(style.PILOT_STATE_COLOURS, status),
                )
            )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title="pilots")
    style.count_axis(fig, stacked=True)
    return _layout(fig)
