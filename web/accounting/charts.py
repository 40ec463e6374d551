"""The accounting page's figures: running jobs over time, jobs finished and failed, CPU time
delivered and its efficiency, one trace per key of the grouping. Windows longer than
DAILY_AFTER_HOURS are drawn per day (the rows stay hourly in the table's CSV and the API): a
month of hourly bars per key is unreadable, and costs plotly a second to build. Grouped by
group, a group has its colour of every page; a user, site or CE one by its name."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

import plotly.graph_objects as go

from accounting.report import Coverage, Row, job_hours
from web.core import chart_style as style
from web.core.charts import layout

HOUR_MS = 3_600_000
DAILY_AFTER_HOURS = 48


def bucket_of(hours: int) -> str:
    return "day" if hours > DAILY_AFTER_HOURS else "hour"


def _start(at: datetime, bucket: str) -> datetime:
    return at.replace(hour=0) if bucket == "day" else at


def colours(keys, group_by: str) -> dict[str, str]:
    keys = set(keys)
    if group_by == "group":
        return style.group_colours(keys)
    return style.series_colours(keys)


def _by_key(found: list[Row], value, bucket: str) -> dict[str, tuple[list, list]]:
    """Per key, the value summed per bucket."""
    sums: dict[str, dict[datetime, float]] = defaultdict(lambda: defaultdict(float))
    for r in found:
        sums[r.key][_start(r.hour, bucket)] += value(r)
    return {key: (sorted(per), [per[x] for x in sorted(per)]) for key, per in sums.items()}


def running_figure(
    found: list[Row], covered: Coverage, bucket: str = "hour", group_by: str = "group"
) -> go.Figure:
    """Average running jobs per bucket: its job-hours over the hours of it the data covers (a
    day sampled for 3 hours is averaged over those 3, not over 24)."""
    fig = go.Figure()
    series = _by_key(found, lambda r: job_hours(r, covered), bucket)
    span = timedelta(days=1) if bucket == "day" else timedelta(hours=1)
    palette = colours(series, group_by)
    for key, (xs, ys) in sorted(series.items()):
        means = [
            y / max(covered.hours_within(x, x + span), 1 / 60) for x, y in zip(xs, ys, strict=True)
        ]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=means,
                name=key,
                mode="lines+markers",
                stackgroup="running",
                line={"color": palette[key]},
            )
        )
    fig.update_yaxes(title=f"running jobs ({bucket}ly average)".replace("dayly", "daily"))
    style.axis_format(fig, "y", style.DECIMAL)
    return layout(fig)


def per_bucket_figure(
    found: list[Row],
    value,
    title: str,
    bucket: str = "hour",
    group_by: str = "group",
    counts: bool = True,
) -> go.Figure:
    fig = go.Figure()
    width = HOUR_MS * (24 if bucket == "day" else 1) * 0.9
    series = _by_key(found, value, bucket)
    palette = colours(series, group_by)
    for key, (xs, ys) in sorted(series.items()):
        fig.add_trace(
            go.Bar(x=xs, y=ys, name=key, width=width, offset=0, marker={"color": palette[key]})
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title=f"{title} per {bucket}")
    if counts:
        style.count_axis(fig, stacked=True)
    else:
        style.axis_format(fig, "y", style.DECIMAL)
    return layout(fig)


def cpu_efficiency_figure(found: list[Row], bucket: str = "hour", group_by: str = "group"):
    """CPU time over wall time per bucket and key, where the payloads reported wall time."""
    cpu = _by_key(found, lambda r: r.cpu_hours, bucket)
    wall = _by_key(found, lambda r: r.wall_hours, bucket)
    palette = colours(wall, group_by)
    fig = go.Figure()
    for key, (xs, walls) in sorted(wall.items()):
        points = [(x, c / w) for x, c, w in zip(xs, cpu[key][1], walls, strict=True) if w > 0]
        if points:
            fig.add_trace(
                go.Scatter(
                    x=[x for x, _ in points],
                    y=[e for _, e in points],
                    name=key,
                    mode="lines+markers",
                    line={"color": palette[key]},
                )
            )
    fig.update_yaxes(title=f"CPU efficiency per {bucket}", rangemode="tozero")
    style.axis_format(fig, "y", style.PERCENT)
    return layout(fig)
