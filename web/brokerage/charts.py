"""Brokerage figures: why candidates were removed, and how the survivors weigh."""

import plotly.graph_objects as go

from web.core import chart_style as style
from web.matcher.charts import _layout


def removed_by_figure(removed_by: dict[str, int], kept: int) -> go.Figure:
    """A bar per check: how many candidates it removed (counts only, see
    BrokerageRun.removed_counts), and the candidates kept."""
    checks = sorted(removed_by, key=lambda k: (-removed_by[k], k))
    fig = go.Figure(
        go.Bar(
            x=[removed_by[c] for c in checks] + [kept],
            y=[*checks, "kept"],
            orientation="h",
            marker_color=["#dc2626"] * len(checks) + ["#22c55e"],
        )
    )
    fig.update_xaxes(title="candidates")
    style.count_axis(fig, "x")
    fig.update_yaxes(autorange="reversed")
    fig = _layout(fig)
    fig.update_layout(height=max(200, 28 * (len(checks) + 1) + 60))
    return fig


def weights_figure(rows: list[dict], chosen: list[str]) -> go.Figure:
    """A bar per kept candidate, the chosen ones highlighted."""
    rows = sorted(rows, key=lambda r: -(r.get("weight") or 0))[:40]
    fig = go.Figure(
        go.Bar(
            x=[r["name"] for r in rows],
            y=[r.get("weight") or 0 for r in rows],
            marker_color=["#2563eb" if r["name"] in chosen else "#94a3b8" for r in rows],
            hovertext=[
                ", ".join(
                    f"{k}={v}" for k, v in r.get("factors", {}).items() if not isinstance(v, dict)
                )
                for r in rows
            ],
        )
    )
    fig.update_yaxes(title="weight")
    style.axis_format(fig, "y", style.WEIGHT)
    return _layout(fig)


def queue_weights_figure(rows: list[dict]) -> go.Figure:
    fig = go.Figure(
        go.Bar(
            x=[r["queue"].name for r in rows],
            y=[r["weight"] for r in rows],
            marker_color="#2563eb",
        )
    )
    fig.update_yaxes(title="basic weight (running vs queued)")
    style.axis_format(fig, "y", style.WEIGHT)
    return _layout(fig)


def stabilizer_figure(rows: list[dict]) -> go.Figure:
    """Per analysis queue: the user's queued jobs against the stabilizer's max_q_len."""
    names = [r["queue"].name for r in rows]
    fig = go.Figure(
        [
            go.Bar(
                name="max_q_len", x=names, y=[r["max_q_len"] for r in rows], marker_color="#94a3b8"
            ),
            go.Bar(
                name="the user's queued jobs",
                x=names,
                y=[r["nQ_user"] for r in rows],
                marker_color=["#dc2626" if r["too_many"] else "#2563eb" for r in rows],
            ),
        ]
    )
    fig.update_layout(barmode="group")
    fig.update_yaxes(title="jobs")
    style.count_axis(fig)
    return _layout(fig)
