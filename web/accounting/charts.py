"""The accounting page's figures: running jobs over time, jobs finished and failed, CPU time
delivered and its efficiency, one trace per key of the grouping (the SHOWN_KEYS busiest, the
rest summed into one: `fold`), from the hourly rows or a day's cells. Windows longer than
DAILY_AFTER_HOURS are drawn per day (the rows stay hourly in the table's CSV and the API): a
month of hourly bars per key is unreadable, and costs plotly a second to build. Grouped by
group, a group has its colour of every page; a user, site or CE one by its name."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import fields, replace
from datetime import datetime, timedelta

import plotly.graph_objects as go

from accounting.report import Cell, Coverage, Row, job_hours
from web.core import chart_style as style
from web.core.charts import layout

HOUR_MS = 3_600_000
DAILY_AFTER_HOURS = 48
# Keys drawn each as its own trace: as many as the palette has colours (past them colours
# repeat and no trace is told apart; hundreds of traces also cost plotly seconds).
SHOWN_KEYS = len(style.PALETTE)


def bucket_of(hours: int) -> str:
    return "day" if hours > DAILY_AFTER_HOURS else "hour"


def _start(at: datetime, bucket: str) -> datetime:
    return at.replace(hour=0) if bucket == "day" else at


def over_window(fig: go.Figure, hours: int, bucket: str, now: datetime) -> go.Figure:
    """The figure's time axis spans the window of the last `hours` (whole buckets), not only
    the buckets that have data: a grid sampled for one day of a month shows that day as one
    day of thirty, not zoomed to its minutes."""
    step = timedelta(days=1) if bucket == "day" else timedelta(hours=1)
    first = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=hours - 1)
    last = now.replace(minute=0, second=0, microsecond=0)
    fig.update_xaxes(range=[_start(first, bucket), _start(last, bucket) + step])
    return fig


def fold(found: list[Row] | list[Cell], busiest: list[str]) -> tuple[list, str | None]:
    """The rows (or a day's cells) as the charts draw them: those of the SHOWN_KEYS first keys
    of `busiest` (the totals' order) as they are, the others' summed per hour (day) into one
    keyed "N others" (its name is returned). Every figure per bucket, summed over the keys,
    stays what it was: the values add up (running jobs and job-hours of one hour too)."""
    if len(busiest) <= SHOWN_KEYS:
        return found, None
    shown = set(busiest[:SHOWN_KEYS])
    others = f"{len(busiest) - SHOWN_KEYS} others"
    out: list = []
    merged: dict[datetime, Row | Cell] = {}
    for r in found:
        if r.key in shown:
            out.append(r)
            continue
        m = merged.get(r.hour)
        if m is None:
            merged[r.hour] = replace(r, key=others)
            out.append(merged[r.hour])
            continue
        for f in fields(m):
            if f.name not in ("hour", "key"):
                setattr(m, f.name, getattr(m, f.name) + getattr(r, f.name))
    return out, others


def colours(keys, group_by: str, others: str | None = None) -> dict[str, str]:
    keys = set(keys) - {others}
    if group_by == "group":
        palette = style.group_colours(keys)
    else:
        palette = style.series_colours(keys)
    return palette | ({others: style.OTHER} if others else {})


def _by_key(found: list[Row] | list[Cell], value, bucket: str) -> dict[str, tuple[list, list]]:
    """Per key, the value summed per bucket."""
    sums: dict[str, dict[datetime, float]] = defaultdict(lambda: defaultdict(float))
    for r in found:
        sums[r.key][_start(r.hour, bucket)] += value(r)
    return {key: (sorted(per), [per[x] for x in sorted(per)]) for key, per in sums.items()}


def running_figure(
    found: list[Row] | list[Cell],
    covered: Coverage,
    bucket: str = "hour",
    group_by: str = "group",
    others: str | None = None,
) -> go.Figure:
    """Average running jobs per bucket: its job-hours over the hours of it the data covers (a
    day sampled for 3 hours is averaged over those 3, not over 24)."""
    series = _by_key(found, lambda r: job_hours(r, covered), bucket)
    span = timedelta(days=1) if bucket == "day" else timedelta(hours=1)
    palette = colours(series, group_by, others)
    traces = []
    for key, (xs, ys) in sorted(series.items()):
        means = [
            y / max(covered.hours_within(x, x + span), 1 / 60) for x, y in zip(xs, ys, strict=True)
        ]
        traces.append(
            {
                "type": "scatter",
                "x": xs,
                "y": means,
                "name": key,
                "mode": "lines+markers",
                "stackgroup": "running",
                "line": {"color": palette[key]},
            }
        )
    fig = go.Figure(data=traces)
    fig.update_yaxes(title=f"running jobs ({bucket}ly average)".replace("dayly", "daily"))
    style.axis_format(fig, "y", style.DECIMAL)
    return layout(fig)


def per_bucket_figure(
    found: list[Row] | list[Cell],
    value,
    title: str,
    bucket: str = "hour",
    group_by: str = "group",
    counts: bool = True,
    others: str | None = None,
) -> go.Figure:
    width = HOUR_MS * (24 if bucket == "day" else 1) * 0.9
    series = _by_key(found, value, bucket)
    palette = colours(series, group_by, others)
    bars = [
        {"type": "bar", "x": xs, "y": ys, "name": key, "width": width, "offset": 0,
         "marker": {"color": palette[key]}}
        for key, (xs, ys) in sorted(series.items())
    ]  # fmt: skip
    fig = go.Figure(data=bars)
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title=f"{title} per {bucket}")
    if counts:
        style.count_axis(fig, stacked=True)
    else:
        style.axis_format(fig, "y", style.DECIMAL)
    return layout(fig)


def cpu_efficiency_figure(
    found: list[Row] | list[Cell],
    bucket: str = "hour",
    group_by: str = "group",
    others: str | None = None,
):
    """CPU time over wall time per bucket and key, where the payloads reported wall time."""
    cpu = _by_key(found, lambda r: r.cpu_hours, bucket)
    wall = _by_key(found, lambda r: r.wall_hours, bucket)
    palette = colours(wall, group_by, others)
    traces = []
    for key, (xs, walls) in sorted(wall.items()):
        points = [(x, c / w) for x, c, w in zip(xs, cpu[key][1], walls, strict=True) if w > 0]
        if points:
            traces.append(
                {
                    "type": "scatter",
                    "x": [x for x, _ in points],
                    "y": [e for _, e in points],
                    "name": key,
                    "mode": "lines+markers",
                    "line": {"color": palette[key]},
                }
            )
    fig = go.Figure(data=traces)
    fig.update_yaxes(title=f"CPU efficiency per {bucket}", rangemode="tozero")
    style.axis_format(fig, "y", style.PERCENT)
    return layout(fig)
