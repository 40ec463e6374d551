"""Plotly figures of the ClassAd pages: plain data in, figures out."""

import plotly.graph_objects as go

from web.core import chart_style as style
from web.matcher.charts import _layout


def site_ad_figure(samples: list[dict]) -> go.Figure:
    """CurMatches (the negotiator's increments, the monitor's recounts) against MaxMatches."""
    xs = [s["at"] for s in samples]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[s["cur_matches"] for s in samples],
            name="CurMatches",
            line={"color": "#2563eb", "shape": "hv"},
            mode="lines+markers",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[s["max_matches"] for s in samples],
            name="MaxMatches",
            line={"color": "#dc2626", "dash": "dash", "shape": "hv"},
        )
    )
    fig.update_yaxes(title="matches", rangemode="tozero")
    style.count_axis(fig)
    return _layout(fig)


def negotiation_figure(runs: list[dict]) -> go.Figure:
    """Matches per negotiation cycle (bars) and the cycle's duration (line, right axis)."""
    xs = [r["at"] for r in runs]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(x=xs, y=[r["matches"] for r in runs], name="matches", marker_color="#16a34a")
    )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[r["seconds"] for r in runs],
            name="duration (s)",
            yaxis="y2",
            line={"color": "#9333ea"},
        )
    )
    fig.update_layout(
        yaxis={"title": "matches"},
        yaxis2={"title": "seconds", "overlaying": "y", "side": "right", "rangemode": "tozero"},
    )
    style.count_axis(fig, "y")
    style.axis_format(fig, "y2", style.DECIMAL)
    return _layout(fig)
