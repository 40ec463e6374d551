"""The fair-share figures: plain data in (web.shares.overview's histories), figures out."""

import plotly.graph_objects as go

from web.core.charts import PALETTE, layout


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
    return layout(fig)


def corrections_figure(history: dict) -> go.Figure:
    fig = go.Figure()
    for i, (label, (xs, ys)) in enumerate(sorted(history.items())):
        fig.add_trace(go.Scatter(x=xs, y=ys, name=label, line={"color": PALETTE[i % len(PALETTE)]}))
    fig.add_hline(y=1.0, line={"color": "#9ca3af", "dash": "dot"})
    fig.update_yaxes(title="correction factor", type="log")
    return layout(fig)
