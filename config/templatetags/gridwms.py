from django import template

register = template.Library()


@register.filter
def pct(value, digits=1):
    """0.0596 -> '6.0 %'; None -> '—'."""
    if value is None or value == "":
        return "—"
    return f"{float(value) * 100:.{int(digits)}f} %"
