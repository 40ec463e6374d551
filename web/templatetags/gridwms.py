import math
from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from core import clock
from core.clock import ago

register = template.Library()


@register.filter
def pct(value, digits=1):
    """0.0596 -> '6.0 %'; None -> '—'."""
    if value is None or value == "":
        return "—"
    return f"{float(value) * 100:.{int(digits)}f} %"


@register.filter
def number(value):
    """A measured number as people read it: 4 significant digits, no exponent, no trailing
    zeros (33.18000272488074 -> '33.18', 1.88333 -> '1.883', 0.00012345 -> '0.0001235')."""
    if value is None or value == "":
        return "—"
    if isinstance(value, int):  # bool too
        return str(value)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    digits = max(0, 3 - math.floor(math.log10(abs(value))))
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _readable(value):
    if isinstance(value, dict):
        if not value:
            return mark_safe('<span class="muted">—</span>')
        return format_html(
            '<dl class="kvs">{}</dl>',
            format_html_join(
                "",
                "<div><dt>{}</dt><dd>{}</dd></div>",
                ((k, _readable(v)) for k, v in value.items()),
            ),
        )
    if isinstance(value, (list, tuple)):
        if not value:
            return mark_safe('<span class="muted">none</span>')
        return format_html_join(", ", "{}", ((_readable(v),) for v in value))
    if value is None:
        return mark_safe('<span class="muted">—</span>')
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return number(value)
    return format_html("{}", value)


@register.filter
def readable(value):
    """A stored structure (JSON: counts, factors, a parsed spec) as people read it: a dict as a
    key/value list (nested ones inside), a list comma-separated, numbers rounded."""
    return format_html("{}", _readable(value))


@register.filter
def when(value, kind="sim"):
    """A timestamp with how long ago it was on the reader's watch. `sim` (the default) marks
    what the grid's clock wrote (jobs, tasks, pilots, cycles): while the simulated grid's clock
    drives it, the time is labelled simulated (how long ago on that clock in its tooltip) and
    "ago" is still real time (clock.real_ago). `real` marks wall-clock timestamps (gdpconfig
    history)."""
    if not isinstance(value, datetime):
        return mark_safe('<span class="muted">—</span>') if not value else value
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    text = date_format(local, "Y-m-d H:i:s")
    if kind != "real" and clock.is_simulated():
        speed = clock.speed()
        pace = f"{number(speed)}× real time" if speed else "paused"
        return format_html(
            '<abbr class="sim-label" title="simulated time (the clock runs {})">sim</abbr>'
            ' <time datetime="{}" class="sim" title="on the simulated clock: {}">{}</time>,'
            ' <span class="ago" title="real time">{}</span>',
            pace,
            value.isoformat(),
            ago((clock.now() - value).total_seconds()),
            text,
            clock.real_ago(value),
        )
    now = clock.now() if kind != "real" else timezone.now()
    relative = ago((now - value).total_seconds())
    return format_html(
        '<time datetime="{}" title="{}">{}</time> <span class="ago">{}</span>',
        value.isoformat(),
        "real time" if kind == "real" else relative,
        text,
        relative,
    )


@register.filter
def duration(seconds):
    """Real seconds as people read them: '42 s', '7 min 3 s', '2 h 5 min', '3 d 4 h'; None
    (not known) as a dash."""
    if seconds is None or seconds == "":
        return mark_safe('<span class="muted">—</span>')
    seconds = int(float(seconds))
    units = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))
    first = next(i for i, (size, _) in enumerate(units) if seconds >= size or size == 1)
    size, unit = units[first]
    text = f"{seconds // size} {unit}"
    if first + 1 < len(units) and (rest := seconds % size // units[first + 1][0]):
        text += f" {rest} {units[first + 1][1]}"
    return text


@register.simple_tag
def job_durations(job, history):
    """{"waited_seconds", "ran_seconds"} of a job in real seconds (web.matcher.job_times)."""
    from web.matcher.job_times import durations

    return durations(job, history)


@register.simple_tag(takes_context=True)
def auto_refresh_toggle(context):
    """The auto-refresh toggle on the pages that registered for it (web.core.refresh)."""
    from web.core import refresh

    request = context.get("request")
    if request is None or not refresh.offered(request):
        return ""
    return format_html(
        '<label class="auto-refresh" title="reload this page every {} s while it is in view">'
        '<input type="checkbox" data-auto-refresh="{}"> auto-refresh</label>',
        refresh.REFRESH_SECONDS,
        refresh.REFRESH_SECONDS,
    )


@register.simple_tag
def state_colours():
    """Every state badge (`.status.<state>`) marked with its state's colour on the charts
    (web.core.chart_style): one colour for a job or pilot state on every page."""
    from web.core.chart_style import JOB_STATE_COLOURS, PILOT_STATE_COLOURS

    colours = {**{k.lower(): v for k, v in PILOT_STATE_COLOURS.items()}, **JOB_STATE_COLOURS}
    rules = "".join(
        f".status.{name}{{box-shadow:inset 4px 0 0 {colour}}}"
        for name, colour in sorted(colours.items())
    )
    return mark_safe(f"<style>{rules}</style>")


@register.filter
def change_value(value):
    """A group change's old or new value as the Shares page writes a JobShare (40000, not
    40000.0); anything else as it is."""
    from web.shares.forms import change_text

    return change_text(value)
