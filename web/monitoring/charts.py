"""The error summary's histogram: failed jobs per time bucket over the window."""

from __future__ import annotations

import datetime

import plotly.graph_objects as go

from web.core import chart_style as style
from web.core.charts import layout

BUCKET_MS = {"minute": 60_000, "hour": 3_600_000, "day": 86_400_000}


def failures_figure(
    histogram: list[tuple[datetime.datetime, int]],
    bucket: str,
    since: datetime.datetime,
    until: datetime.datetime,
) -> go.Figure:
    width = BUCKET_MS[bucket]
    fig = go.Figure(
        go.Bar(
            x=[at + datetime.timedelta(milliseconds=width / 2) for at, _n in histogram],
            y=[n for _at, n in histogram],
            width=[width * 0.9] * len(histogram),
            marker_color=style.colour(style.JOB_STATE_COLOURS, "failed"),
            name="failed jobs",
            hovertemplate="%{y} failed<extra></extra>",
        )
    )
    fig.update_xaxes(range=[since, until], title=f"entered failed (per {bucket})")
    fig.update_yaxes(title="failed jobs", rangemode="tozero")
    style.count_axis(fig)
    return layout(fig)
