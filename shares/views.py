from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from config.decorators import staff_required
from shares import services
from shares.forms import GroupShareForm
from shares.models import GridGroup, GroupChange


@staff_required
@require_POST
def group_edit(request, pk):
    group = get_object_or_404(GridGroup, pk=pk)
    form = GroupShareForm(request.POST, instance=GridGroup.objects.get(pk=pk))
    if form.is_valid():
        data = {f: form.cleaned_data[f] for f in ("job_share", "job_sharing", "generic_pilot")}
        services.update_group(group, data, request.user, form.cleaned_data["comment"])
        messages.success(request, f"{group.name} saved.")
    else:
        for field, errors in form.errors.items():
            messages.error(request, f"{group.name} {field}: {' '.join(errors)}")
    return redirect("/shares/#groups")


@staff_required
@require_POST
def change_revert(request, pk):
    change = get_object_or_404(GroupChange, pk=pk)
    services.revert_change(change, request.user)
    messages.success(request, f"{change.group.name} {change.field} is back to {change.old}.")
    return redirect("/shares/#history")
