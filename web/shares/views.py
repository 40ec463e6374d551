from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core import gdpconfig
from matcher.services import groups
from shares.models import GridGroup, GroupChange, User
from web.core.charts import to_html
from web.core.confirm import confirmation
from web.core.decorators import staff_required
from web.core.forms import ParameterForm
from web.shares import charts, overview, people
from web.shares.forms import GroupShareForm


def shares_page(request):
    """The fair-share page, with the matcher's TaskQueues by priority."""
    data = overview.overview()
    for row in data["rows"]:
        row["form"] = GroupShareForm(
            instance=row["group"], prefix=GroupShareForm.prefix_for(row["group"])
        )
    history = overview.share_history()
    corr_history = overview.correction_history()
    params = {}
    if request.user.is_staff:
        for name in ("EnableSharesCorrection", "PRIORITY_CONSOLIDATION", "WMSHistory"):
            p = gdpconfig.param(name)
            params[name] = ParameterForm(
                param=p, initial={"value": p.to_text(gdpconfig.get(name))}, prefix=name
            )
    context = {
        "taskqueues": overview.taskqueues(request),
        **data,
        "share_chart": to_html(charts.share_figure(history)) if history["achieved"] else "",
        "corrections_chart": to_html(charts.corrections_figure(corr_history))
        if corr_history
        else "",
        "changes": GroupChange.objects.select_related("group", "changed_by")[:30],
        "params": params,
        "correction_enabled": gdpconfig.get("EnableSharesCorrection"),
        "consolidation": gdpconfig.get("PRIORITY_CONSOLIDATION"),
    }
    return render(request, "shares/shares.html", context)


def user_detail(request, username):
    """One user's page: jobs by state, tasks, share standing, analysis caps, recent failures
    (the apps holding them add their sections: web.shares.people). Their own, or staff's."""
    subject = get_object_or_404(User, username=username)
    if not people.may_see(request.user, subject):
        raise Http404("No such user.")
    context = {
        "subject": subject,
        "groups": subject.grid_groups.order_by("name"),
        "standing": people.standing(subject),
        "sections": people.sections(request.user, subject),
    }
    return render(request, "shares/user.html", context)


@staff_required
@require_POST
def group_edit(request, pk):
    group = get_object_or_404(GridGroup, pk=pk)
    # The Shares page draws one form per group, each with its own prefix.
    form = GroupShareForm(request.POST, instance=group, prefix=GroupShareForm.prefix_for(group))
    if form.is_valid():
        data = {f: form.cleaned_data[f] for f in ("job_share", "job_sharing", "generic_pilot")}
        groups.update_group(group, data, request.user, form.cleaned_data["comment"])
        messages.success(request, f"{group.name} saved.")
    else:
        for field, errors in form.errors.items():
            label = form.fields[field].label if field in form.fields else ""
            messages.error(request, f"{group.name} {label or field}: {' '.join(errors)}")
    return redirect(f"/shares/#group-{group.pk}")


@staff_required
@require_POST
def change_revert(request, pk):
    change = get_object_or_404(GroupChange.objects.select_related("group"), pk=pk)
    page = confirmation(
        request,
        title=f"Revert change {change.pk}",
        question=(
            f"Put {change.group.name}'s {change.field_label} back from {change.new} to "
            f"{change.old}? The priorities of its TaskQueues are recomputed."
        ),
        action="Revert",
        back="/shares/#history",
    )
    if page is not None:
        return page
    groups.revert_change(change, request.user)
    messages.success(request, f"{change.group.name} {change.field_label} is back to {change.old}.")
    return redirect("/shares/#history")
