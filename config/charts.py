"""What every app's Plotly figures share: the page layout, the palette, and `to_html`, which
places a figure on a page. The figures themselves live with the app whose data they draw."""

import uuid

import plotly.graph_objects as go
from django.utils.html import format_html
from django.utils.safestring import mark_safe

PALETTE = ["#2563eb", "#16a34a", "#dc2626", "#9333ea", "#ea580c", "#0891b2", "#ca8a04"]


def layout(fig: go.Figure) -> go.Figure:
    # No plot title: the card around the chart carries the heading.
    fig.update_layout(
        height=300,
        margin={"l": 50, "r": 20, "t": 10, "b": 40},
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
    )
    return fig


def to_html(fig: go.Figure) -> str:
    """A placeholder and the figure as JSON, no inline code: static/js/gridwms.js draws it once
    plotly has loaded (deferred, and only on pages that have a chart)."""
    chart_id = f"chart-{uuid.uuid4().hex[:12]}"
    # plotly's own encoder (dates, numpy); <, > and & escaped so that no text ends the script
    spec = fig.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return format_html(
        '<div style="height:{}px; width:100%;"><div id="{}" class="plotly-graph-div" '
        'style="height:100%; width:100%;"></div>'
        '<script type="application/json" data-chart="{}">{}</script></div>',
        fig.layout.height or 450,
        chart_id,
        chart_id,
        mark_safe(spec),  # JSON, its markup characters escaped above
    )
