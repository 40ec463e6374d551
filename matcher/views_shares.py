from django.shortcuts import render

from config import gdpconfig
from config.forms import ParameterForm
from matcher import charts, selectors, share_overview
from matcher.models import TaskQueue
from shares.forms import GroupShareForm
from shares.models import GroupChange


def shares_page(request):
    data = share_overview.overview()
    for row in data["rows"]:
        row["form"] = GroupShareForm(
            instance=row["group"], prefix=GroupShareForm.prefix_for(row["group"])
        )
    history = share_overview.share_history()
    corr_history = share_overview.correction_history()
    params = {}
    if request.user.is_staff:
        for name in ("EnableSharesCorrection", "PRIORITY_CONSOLIDATION", "WMSHistory"):
            p = gdpconfig.param(name)
            params[name] = ParameterForm(
                param=p, initial={"value": p.to_text(gdpconfig.get(name))}, prefix=name
            )
    context = {
        **data,
        "share_chart": charts.to_html(charts.share_figure(history)) if history["achieved"] else "",
        "corrections_chart": charts.to_html(charts.corrections_figure(corr_history))
        if corr_history
        else "",
        "taskqueues": selectors.taskqueues_with_counts(
            TaskQueue.objects.visible_to(request.user)
        ).order_by("-priority", "id")[:15],
        "changes": GroupChange.objects.select_related("group", "changed_by")[:30],
        "params": params,
        "correction_enabled": gdpconfig.get("EnableSharesCorrection"),
        "consolidation": gdpconfig.get("PRIORITY_CONSOLIDATION"),
    }
    return render(request, "shares/shares.html", context)
