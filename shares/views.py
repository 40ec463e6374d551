from django.db.models import Count
from django.shortcuts import render

from shares.models import GridGroup


def group_list(request):
    groups = GridGroup.objects.annotate(n_members=Count("members"))
    total = sum(g.job_share for g in groups) or 1.0
    rows = [{"group": g, "fraction": g.job_share / total} for g in groups]
    return render(request, "shares/group_list.html", {"rows": rows})
