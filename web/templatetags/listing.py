"""Sortable column headers for list pages (web.core.listing).

`{% sort_th "cpu_time" "CPU (s)" "num" %}` is a header cell whose link sorts the list by that
column, ascending first and the other way on a second click, keeping every other parameter of
the URL (filters, search, time range, page size) and going back to the first page. The key must
be one of the FilterSet's `ordering` parameters: a header cannot offer a sort the server
refuses.
"""

from django import template
from django.utils.html import format_html

register = template.Library()

ARROWS = {"ascending": " ▲", "descending": " ▼", "none": ""}


def _current(request) -> str:
    value = request.GET.get("ordering", "")
    return value.split(",")[0].strip()


@register.simple_tag(takes_context=True)
def sort_th(context, key: str, label: str, css: str = ""):
    request, filterset = context["request"], context["filter"]
    sort = filterset.filters["ordering"]
    if key not in sort.sort_keys():
        raise template.TemplateSyntaxError(f"{key!r} is not a sort key of this list")
    current = _current(request)
    state = {key: "ascending", f"-{key}": "descending"}.get(current, "none")
    params = request.GET.copy()
    for name in ("page", "format"):
        params.pop(name, None)
    params["ordering"] = f"-{key}" if state == "ascending" else key
    return format_html(
        '<th class="{}" aria-sort="{}"><a class="sort" data-sort="{}" href="?{}">{}{}</a></th>',
        css,
        state,
        key,
        params.urlencode(),
        label,
        ARROWS[state],
    )
