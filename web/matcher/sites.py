"""A site's page: its computing elements (each with an anchor, #ce-<name>, that a job's or a
pilot's CE links to), its visible jobs by status and its pilots by CE. The job page links its
site and CE here (site_links)."""

from django.db.models import Count
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from matcher import job_counts
from matcher.models import ComputingElement, Site
from pilots.models import Pilot


def site_detail(request, pk):
    site = get_object_or_404(Site, pk=pk)
    jobs = job_counts.by_status(request.user, site=site.name)  # the counts, not the jobs
    pilots: dict[str, dict[str, int]] = {}
    for row in (
        Pilot.objects.filter(site=site.name)
        .order_by()
        .values("ce", "status")
        .annotate(n=Count("*"))
    ):
        pilots.setdefault(row["ce"], {})[row["status"]] = row["n"]
    context = {
        "site": site,
        "ces": site.computing_elements.all(),
        "jobs_by_status": sorted(jobs.items()),
        "pilots_by_ce": sorted(pilots.items()),
    }
    return render(request, "matcher/site_detail.html", context)


def site_links(site_name: str, ce_name: str) -> dict:
    """The URLs of a site and a CE named on a job ("" for a name no Site or CE has: a PanDA
    queue, a deleted CE)."""
    out = {"site_url": "", "ce_url": ""}
    ce = (
        ComputingElement.objects.filter(name=ce_name).select_related("site").first()
        if ce_name
        else None
    )
    if ce is not None:
        out["ce_url"] = reverse("site-detail", args=[ce.site_id]) + f"#ce-{ce.name}"
    site_id = (
        Site.objects.filter(name=site_name).values_list("pk", flat=True).first()
        if site_name
        else None
    )
    if site_id is not None:
        out["site_url"] = reverse("site-detail", args=[site_id])
    return out
