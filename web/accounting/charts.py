"""The accounting page's figures: running jobs over time, jobs finished and failed, CPU time
delivered, one trace per key of the grouping. Windows longer than DAILY_AFTER_HOURS are drawn
per day (the rows stay hourly in the table's CSV and the API): a month of hourly bars per key
is unreadable, and costs plotly a second to build."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

import plotly.graph_objects as go

from accounting.report import Row
from web.core.charts import PALETTE, layout

HOUR_MS = 3_600_000
DAILY_AFTER_HOURS = 48


def bucket_of(hours: int) -> str:
    return "day" if hours > DAILY_AFTER_HOURS else "hour"


def _start(at: datetime, bucket: str) -> datetime:
    return at.replace(hour=0) if bucket == "day" else at


def _by_key(found: list[Row], value, bucket: str, mean: bool) -> dict[str, tuple[list, list]]:
    """Per key, the value per bucket: summed, or (mean) averaged over the bucket's hours."""
    sums: dict[str, dict[datetime, float]] = defaultdict(lambda: defaultdict(float))
    for r in found:
        sums[r.key][_start(r.hour, bucket)] += value(r)
    span = 24 if bucket == "day" and mean else 1
    return {key: (sorted(per), [per[x] / span for x in sorted(per)]) for key, per in sums.items()}


def running_figure(found: list[Row], bucket: str = "hour") -> go.Figure:
    fig = go.Figure()
    series = _by_key(found, lambda r: r.running, bucket, mean=True)
    for i, (key, (xs, ys)) in enumerate(sorted(series.items())):
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                name=key,
                mode="lines+markers",
                stackgroup="running",
                line={"color": PALETTE[i % len(PALETTE)]},
            )
        )
    fig.update_yaxes(title=f"running jobs ({bucket}ly average)".replace("dayly", "daily"))
    return layout(fig)


def per_bucket_figure(found: list[Row], value, title: str, bucket: str = "hour") -> go.Figure:
    fig = go.Figure()
    width = HOUR_MS * (24 if bucket == "day" else 1) * 0.9
    series = _by_key(found, value, bucket, mean=False)
    for i, (key, (xs, ys)) in enumerate(sorted(series.items())):
        fig.add_trace(
            go.Bar(
                x=xs,
                y=ys,
                name=key,
                width=width,
                offset=0,
                marker={"color": PALETTE[i % len(PALETTE)]},
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title=f"{title} per {bucket}")
    return layout(fig)
