"""What every app's Plotly figures share: the page layout, the palette, and `to_html`, which
places a figure on a page. The figures themselves live with the app whose data they draw."""

import uuid
from datetime import datetime, timedelta

import plotly.graph_objects as go
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from web.core.chart_style import PALETTE as PALETTE
from web.core.chart_style import dress
from web.core.plotly_bundle import drawable

# The shortest stretch of time a time axis spans: one sample (or a few seconds of them) would
# otherwise get a range of milliseconds, ticked in fractions of a second.
MIN_TIME_SPAN = timedelta(minutes=10)
# A lone bar on a time axis (one director or negotiator cycle so far), in ms: a minute wide.
LONE_BAR_WIDTH_MS = 60_000


def layout(fig: go.Figure) -> go.Figure:
    """The page layout of every chart. Its width is always its card's: none is set here, the
    figure autosizes to its container (and follows it: `responsive` in static/js/gridwms.js).
    Margins grow to what the tick labels and axis titles need (automargin) rather than being
    guessed, and the legend sits in a row above the plot, so that a chart in a narrow card keeps
    its width for the plot and not for the legend."""
    # No plot title: the card around the chart carries the heading.
    fig.update_layout(
        height=300,
        autosize=True,
        margin={"l": 8, "r": 8, "t": 10, "b": 8, "pad": 2},
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"},
    )
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    _time_axis(fig)
    dress(fig)  # colours, number formats, angled labels, "no data in this window"
    return fig


def _time_axis(fig: go.Figure) -> None:
    """A time x axis spans MIN_TIME_SPAN at least, centred on its samples, and a lone bar on it
    is drawn a minute wide."""
    times = [
        x
        for trace in fig.data
        for x in (getattr(trace, "x", None) or ())
        if isinstance(x, datetime)
    ]
    if not times or any(t.type == "bar" and t.width is not None for t in fig.data):
        return  # no time axis, or bars of their own width (per hour...): plotly's range fits them
    first, last = min(times), max(times)
    if last - first < MIN_TIME_SPAN:
        pad = (MIN_TIME_SPAN - (last - first)) / 2
        fig.update_xaxes(range=[first - pad, last + pad])
        for trace in fig.data:
            if trace.type == "bar" and trace.width is None and len(set(trace.x or ())) == 1:
                trace.width = LONE_BAR_WIDTH_MS


def to_html(fig: go.Figure) -> str:
    """A placeholder and the figure as JSON, no inline code: static/js/gridwms.js draws it when it
    comes into view (plotly's basic bundle: the figure as web.core.plotly_bundle makes it)."""
    chart_id = f"chart-{uuid.uuid4().hex[:12]}"
    # plotly's own encoder (dates, numpy); <, > and & escaped so that no text ends the script
    spec = drawable(fig).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return format_html(
        '<div style="height:{}px; width:100%;"><div id="{}" class="plotly-graph-div" '
        'style="height:100%; width:100%;"></div>'
        '<script type="application/json" data-chart="{}">{}</script></div>',
        fig.layout.height or 450,
        chart_id,
        chart_id,
        mark_safe(spec),  # JSON, its markup characters escaped above
    )
