"""What the pages' plotly.js can draw: its basic bundle (static/vendor/plotly-basic.min.js,
scripts/fetch_plotly.py), which holds the trace types bar, pie and scatter only, a quarter of the
full bundle. `drawable` gives a figure's JSON as the bundle draws it: a histogram becomes the bars
of its bins, counted here, and the template keeps only the bundle's trace types. Any other trace
type is a programming error, raised when the figure is placed on a page."""

from __future__ import annotations

import math
from collections import Counter

import plotly.graph_objects as go
from plotly.io.json import to_json_plotly

BUNDLE = "vendor/plotly-basic.min.js"
TRACE_TYPES = frozenset({"bar", "pie", "scatter"})
HISTOGRAM_HOVER = (
    "%{customdata[0]:.2~f} to %{customdata[1]:.2~f}: %{y}<extra>%{fullData.name}</extra>"
)
# The histogram traces' keys a bar has too, carried over as they are.
_SHARED = ("name", "marker", "legendgroup", "showlegend", "opacity", "visible", "xaxis", "yaxis")


def drawable(fig: go.Figure) -> str:
    """`fig` as JSON (plotly's encoder: dates, numpy), its histograms as bars and its template
    trimmed to TRACE_TYPES. Raises ValueError naming a trace type the bundle lacks."""
    other = sorted({t.type for t in fig.data} - TRACE_TYPES - {"histogram"})
    if other:
        raise ValueError(f"{', '.join(other)}: not in {BUNDLE} (bar, pie and scatter only)")
    spec = fig.to_plotly_json()
    spec["data"] = [_as_bars(t) if t.get("type") == "histogram" else t for t in spec["data"]]
    template = spec["layout"].get("template")
    if template and "data" in template:
        template["data"] = {k: v for k, v in template["data"].items() if k in TRACE_TYPES}
    return to_json_plotly(spec)


def _as_bars(trace: dict) -> dict:
    """A vertical histogram (x values, xbins.size; xbins.start or the bin of the smallest) as a
    bar per bin that holds a value: its centre, its count, the bin's width."""
    xs = [float(x) for x in trace.get("x") or () if x is not None]
    size = float((trace.get("xbins") or {}).get("size") or 0)
    if not xs or size <= 0:
        raise ValueError("a histogram is drawn as bars only with x values and xbins.size")
    start = (trace.get("xbins") or {}).get("start")
    start = float(start) if start is not None else math.floor(min(xs) / size) * size
    counts = Counter(math.floor((x - start) / size) for x in xs if x >= start)
    bins = sorted(counts)
    bar = {k: trace[k] for k in _SHARED if k in trace}
    bar.update(
        type="bar",
        x=[start + (i + 0.5) * size for i in bins],
        y=[counts[i] for i in bins],
        width=size,
        hovertemplate=HISTOGRAM_HOVER,
        customdata=[[start + i * size, start + (i + 1) * size] for i in bins],
    )
    return bar
