"""What makes every chart read the same way on every page: one colour table per concept (job
states, pilot states, timeout kinds; groups by their stored order), the number formats of the
axes and hover labels, angled category labels, and the "no data in this window" of a figure
with nothing to draw. `web.core.charts.layout` applies the page-wide parts to every figure; the
builders pick their colours and the formats of their own axes here."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from datetime import date, datetime

import plotly.graph_objects as go

# Eighteen colours no two of which are alike (no grey: grey is OTHER), for series that are not
# states: groups, users, sites, TaskQueues, correction entities.
PALETTE = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#dbdb8d",
    "#9edae5",
]
OTHER = "#9ca3af"  # "other", "(none)", a name no table knows

# matcher.models.JobStatus, every state.
JOB_STATE_COLOURS = {
    "pending": "#a78bfa",
    "defined": "#7c3aed",
    "assigned": "#c026d3",
    "throttled": "#db2777",
    "activated": "#2563eb",
    "sent": "#0891b2",
    "starting": "#38bdf8",
    "running": "#22c55e",
    "holding": "#f59e0b",
    "transferring": "#14b8a6",
    "finished": "#166534",
    "failed": "#dc2626",
    "cancelled": "#6b7280",
    "closed": "#334155",
}

# pilots.models.PilotStatus, every state.
PILOT_STATE_COLOURS = {
    "Submitted": "#93c5fd",
    "Ready": "#06b6d4",
    "Scheduled": "#6366f1",
    "Waiting": "#f59e0b",
    "Running": "#22c55e",
    "Done": "#166534",
    "Failed": "#dc2626",
    "Aborted": "#78350f",
}

# timeouts.rules.RULE_NAMES, every kind of timeout.
TIMEOUT_COLOURS = {
    "pending": "#a78bfa",
    "defined": "#7c3aed",
    "assigned": "#c026d3",
    "throttled": "#db2777",
    "activated": "#2563eb",
    "inactive_queue": "#93c5fd",
    "sent": "#0891b2",
    "running": "#22c55e",
    "heartbeat": "#dc2626",
    "transferring_heartbeat": "#fca5a5",
    "holding_high": "#b45309",
    "holding": "#f59e0b",
    "transferring_high": "#0f766e",
    "transferring": "#5eead4",
    "fast_rebrokerage": "#1e293b",
}

# Number formats (d3): no SI suffixes ("200n", "5.6µ"), no runs of decimals.
COUNT = {"tickformat": ",d", "hoverformat": ",d"}
DECIMAL = {"tickformat": ",.2~f", "hoverformat": ",.2f"}
PERCENT = {"tickformat": ".0%", "hoverformat": ".1%"}
WEIGHT = {"tickformat": ",.4~g", "hoverformat": ",.4~g"}
# The most ticks a count axis gets one per unit for (above it, plotly's own integer steps).
UNIT_TICKS_UP_TO = 6

NO_DATA = "no data in this window"
# A category x axis gets its labels angled once it has this many, or one this long.
ANGLE_FROM_CATEGORIES, ANGLE_FROM_CHARS, ANGLE = 6, 10, -45


def colour(table: dict[str, str], name: str) -> str:
    return table.get(name, OTHER)


def group_colours(names: Iterable[str]) -> dict[str, str]:
    """A group's colour is the same on every chart: the palette's colour at the group's place
    in the stored order of the groups (their ids), so that no two of the first len(PALETTE)
    groups share one. A name that is no group's (a label of the page's own) gets OTHER."""
    from shares.models import GridGroup  # the web layer reads the domain; never at import

    wanted = set(names)
    ranks = {
        name: i
        for i, name in enumerate(GridGroup.objects.order_by("pk").values_list("name", flat=True))
        if name in wanted
    }
    return {
        name: PALETTE[ranks[name] % len(PALETTE)] if name in ranks else OTHER for name in wanted
    }


def name_colour(name: str) -> str:
    """A colour by a deterministic function of the name (for users, sites and CEs: the same on
    every page and every run), where no stored order is at hand."""
    return PALETTE[zlib.crc32(name.encode()) % len(PALETTE)]


def series_colours(names: Iterable[str], taken: Iterable[str] = ()) -> dict[str, str]:
    """Distinct colours for one chart's series that are no state or group: each name's own
    (name_colour) unless another series of the chart has it already, then the first free one."""
    used = set(taken)
    out = {}
    for name in sorted(set(names)):
        pick = name_colour(name)
        if pick in used:
            pick = next((c for c in PALETTE if c not in used), pick)
        used.add(pick)
        out[name] = pick
    return out


def axis_format(fig: go.Figure, axis: str, fmt: dict, **more) -> None:
    """axis: "x", "y", "y2"... the layout's xaxis, yaxis, yaxis2."""
    name = f"{axis[0]}axis{axis[1:]}"
    fig.layout[name].update(**fmt, **more)


def count_axis(fig: go.Figure, axis: str = "y", stacked: bool = False) -> None:
    """Whole numbers: never "0.5 jobs"; one tick per unit while the counts are small."""
    top = _top(fig, axis[0], stacked)
    extra = {"tick0": 0, "dtick": 1} if top <= UNIT_TICKS_UP_TO else {}
    axis_format(fig, axis, COUNT, **extra)


def _top(fig: go.Figure, letter: str, stacked: bool) -> float:
    peaks = []
    for trace in fig.data:
        values = [v for v in (getattr(trace, letter, None) or ()) if _is_number(v)]
        if trace.type == "histogram":
            other = getattr(trace, "x" if letter == "y" else "y", None) or ()
            values = [len(other)]  # a bin holds at most every value
        if values:
            peaks.append(max(values))
    return (sum(peaks) if stacked else max(peaks, default=0)) if peaks else 0


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def has_data(fig: go.Figure) -> bool:
    return any(
        len(getattr(t, "x", None) or ()) or len(getattr(t, "y", None) or ()) for t in fig.data
    )


def dress(fig: go.Figure) -> None:
    """The page-wide parts (web.core.charts.layout): "no data in this window" on a figure with
    nothing to draw, a number format on each numeric axis its builder left unformatted, and
    angled labels on a crowded category x axis."""
    if not has_data(fig):
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        fig.update_layout(showlegend=False)
        fig.add_annotation(
            text=NO_DATA,
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
            showarrow=False,
            font={"size": 14, "color": "#6b7280"},
        )
        return
    for name, values in _axis_values(fig).items():
        axis = fig.layout[name]
        kind = axis.type or _kind(values)
        if kind in ("linear", "log") and axis.tickformat is None:
            axis.update(**DECIMAL)
        elif kind == "category" and name.startswith("xaxis") and axis.tickangle is None:
            labels = {str(v) for v in values}
            if len(labels) >= ANGLE_FROM_CATEGORIES or any(
                len(s) > ANGLE_FROM_CHARS for s in labels
            ):
                axis.tickangle = ANGLE


def _axis_values(fig: go.Figure) -> dict[str, list]:
    out: dict[str, list] = {}
    for t in fig.data:
        for letter in ("x", "y"):
            ref = getattr(t, f"{letter}axis", None) or letter
            values = list(getattr(t, letter, None) or ())
            if t.type == "histogram" and not values:
                values = [0]  # the counts axis of a histogram
            out.setdefault(f"{letter}axis{ref[1:]}", []).extend(values)
    return out


def _kind(values: list) -> str:
    if any(isinstance(v, (datetime, date)) for v in values):
        return "date"
    if any(isinstance(v, str) for v in values):
        return "category"
    return "linear"
