"""The timeouts page: jobs approaching each timeout, actions per rule over time, the latest."""

from collections import Counter
from datetime import timedelta

from django.db.models import Count
from django.db.models.functions import TruncHour
from django.shortcuts import render

from core import clock
from timeouts import rules, services
from timeouts.models import TimeoutAction
from web.core.listing import list_page
from web.matcher.charts import to_html
from web.timeouts import charts
from web.timeouts.filters import TimeoutActionFilterSet

TIMEOUT_HORIZON_H = 24
TIMEOUT_HISTORY_DAYS = 7


def action_list(request):
    """Every action of the timeout rules on the jobs the user may see, newest first."""
    qs = TimeoutAction.objects.visible_to(request.user)
    filterset = TimeoutActionFilterSet(request.GET, queryset=qs)
    return list_page(request, filterset, "timeouts/action_list.html", name="timeout-actions")


def timeouts(request):
    """Jobs approaching each timeout, actions per rule over time, the latest actions."""
    now = clock.now()
    titles = {name: rule.title for name, rule in rules.RULE.items()}
    names = rules.RULE_NAMES
    approaching = services.approaching(TIMEOUT_HORIZON_H * 3600, now)
    since = now - timedelta(days=TIMEOUT_HISTORY_DAYS)
    per_hour = list(
        TimeoutAction.objects.filter(at__gte=since)
        .annotate(hour=TruncHour("at"))
        .values_list("hour", "rule")
        .annotate(n=Count("pk"))
        .order_by()
    )
    recent = TimeoutAction.objects.visible_to(request.user)
    totals = Counter()
    for _hour, rule, n in per_hour:
        totals[rule] += n
    soon = Counter(rule for rule, _left in approaching)
    limits = services.load_world().limits
    table = []
    for name in names:
        rule = rules.RULE[name]
        if name == "fast_rebrokerage":
            limit = "FAST_REBRO_THRESHOLD_*"
        elif rule.since == rules.HEARTBEAT and name == "heartbeat":
            limit = rules.human(limits.seconds["HEARTBEAT_TIMEOUT"]) + " (HEARTBEAT_TIMEOUT)"
        elif name == "transferring_heartbeat":
            limit = "HEARTBEAT_TIMEOUT_<workflow>"
        else:
            limit = f"{rules.human(limits.seconds[rule.param])} ({rule.param})"
        table.append(
            {
                "name": name,
                "title": rule.title,
                "states": ", ".join(rule.states),
                "limit": limit,
                "action": rule.action,
                "soon": soon.get(name, 0),
                "acted": totals.get(name, 0),
            }
        )
    return render(
        request,
        "timeouts/timeouts.html",
        {
            "rules": table,
            "horizon_h": TIMEOUT_HORIZON_H,
            "history_days": TIMEOUT_HISTORY_DAYS,
            "approaching_count": len(approaching),
            "time_left_chart": to_html(charts.time_left_figure(approaching, names, titles)),
            "actions_chart": to_html(charts.actions_figure(per_hour, names, titles)),
            "recent": recent[:100],
            "titles": titles,
        },
    )
