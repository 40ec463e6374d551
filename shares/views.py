from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from config.confirm import confirmation
from config.decorators import staff_required
from shares import services
from shares.forms import GroupShareForm
from shares.models import GridGroup, GroupChange


@staff_required
@require_POST
def group_edit(request, pk):
    group = get_object_or_404(GridGroup, pk=pk)
    # The Shares page draws one form per group, each with its own prefix.
    form = GroupShareForm(request.POST, instance=group, prefix=GroupShareForm.prefix_for(group))
    if form.is_valid():
        data = {f: form.cleaned_data[f] for f in ("job_share", "job_sharing", "generic_pilot")}
        services.update_group(group, data, request.user, form.cleaned_data["comment"])
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
    services.revert_change(change, request.user)
    messages.success(request, f"{change.group.name} {change.field_label} is back to {change.old}.")
    return redirect("/shares/#history")
