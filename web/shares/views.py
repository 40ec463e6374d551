from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from core import gdpconfig
from matcher.services import groups
from shares.models import GridGroup, GroupChange
from shares.services import ShareError
from web.core.charts import to_html
from web.core.confirm import confirmation
from web.core.decorators import staff_required
from web.core.forms import ParameterForm
from web.shares import charts, overview, people, preview
from web.shares.forms import GroupShareForm, change_text, share_text


def shares_page(request, editing=None, shown_preview=None, status=200):
    """The fair-share page, with the matcher's TaskQueues by priority. `editing`: a group's
    bound form to show open under its row (refused, or with `shown_preview` of its value)."""
    data = overview.overview()
    memory = preview.memory(data["rows"])
    for row in data["rows"]:
        group = row["group"]
        row["job_share_text"] = share_text(group.job_share)
        if not request.user.is_staff:
            continue
        if editing is not None and editing.instance.pk == group.pk:
            row["form"], row["open"], row["preview"] = editing, True, shown_preview
        else:
            row["form"] = GroupShareForm(instance=group, prefix=GroupShareForm.prefix_for(group))
    history = overview.share_history(waiting_groups=data["waiting_groups"])
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
        "memory": memory,
    }
    return render(request, "shares/shares.html", context, status=status)


def user_detail(request, username):
    """One user's page: jobs by state, tasks, share standing, analysis caps, recent failures
    (the apps holding them add their sections: web.shares.people). Their own, or staff's."""
    subject = people.user_named_or_404(username)
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
@require_http_methods(["GET", "POST"])
def group_edit(request, pk):
    """POST: the Shares page's form of a group (its prefix: GroupShareForm.prefix_for); with
    `preview`, the page again with what the JobShare would make of every group's expected share,
    nothing saved. GET ?job_share=: that preview as JSON (the form's live preview); a value the
    edit would refuse is answered with its errors, by field."""
    group = get_object_or_404(GridGroup, pk=pk)
    if request.method == "GET":
        return _preview_json(group, request.GET.get("job_share", ""))
    # The Shares page draws one form per group, each with its own prefix.
    form = GroupShareForm(request.POST, instance=group, prefix=GroupShareForm.prefix_for(group))
    if not form.is_valid():
        return shares_page(request, editing=form, status=400)
    if "preview" in request.POST:
        shown = preview.preview(group, form.cleaned_data["job_share"])
        return shares_page(request, editing=form, shown_preview=shown)
    data = {f: form.cleaned_data[f] for f in ("job_share", "job_sharing", "generic_pilot")}
    try:
        groups.update_group(group, data, request.user, form.cleaned_data["comment"])
    except ShareError as exc:
        form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        return shares_page(request, editing=form, status=400)
    messages.success(request, f"{group.name} saved.")
    return redirect(f"/shares/#group-{group.pk}")


def _preview_json(group: GridGroup, text: str) -> JsonResponse:
    form = GroupShareForm(
        {"job_share": text, "job_sharing": group.job_sharing, "generic_pilot": group.generic_pilot}
    )
    form.is_valid()  # only job_share's verdict counts here
    if "job_share" in form.errors:
        return JsonResponse({"valid": False, "errors": {"job_share": form.errors["job_share"]}})
    return JsonResponse({"valid": True, **preview.preview(group, form.cleaned_data["job_share"])})


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
    try:
        groups.revert_change(change, request.user)
    except ShareError as exc:
        messages.error(request, f"{change.group.name} not reverted: {exc.message}.")
        return redirect("/shares/#history")
    old = change_text(change.old)
    messages.success(request, f"{change.group.name} {change.field_label} is back to {old}.")
    return redirect("/shares/#history")
