from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from api.classads.serializers import attributes_of
from classads import match_analysis, services
from classads.ads import parse_new
from classads.models import JobAd, SiteAd
from core import clock
from core.models import CycleRun
from shares.ownership import may_act_on
from web.classads import charts
from web.classads.filters import JobAdFilterSet, SiteAdFilterSet
from web.core.listing import list_page
from web.core.paging import paginate
from web.matcher.charts import to_html

ANALYSIS_SITES = 200  # site ads analysed on a job ad's page


def site_ad_list(request):
    filterset = SiteAdFilterSet(request.GET, queryset=SiteAd.objects.order_by("id"))
    return list_page(request, filterset, "classads/site_ad_list.html", name="site-ads")


def site_ad_detail(request, pk):
    site_ad = get_object_or_404(SiteAd, pk=pk)
    samples = list(
        site_ad.samples.order_by("-at", "-id").values("at", "cur_matches", "max_matches")[:500]
    )[::-1]
    if samples:  # the line runs on to now, at the live value
        samples.append(
            {
                "at": clock.now(),
                "cur_matches": site_ad.cur_matches,
                "max_matches": site_ad.max_matches,
            }
        )
    context = {
        "site_ad": site_ad,
        "attributes": sorted(attributes_of(services.live_ad(site_ad)).items()),
        "chart": to_html(charts.site_ad_figure(samples)) if samples else "",
        "job_ads": JobAd.objects.visible_to(request.user)
        .filter(site_ad=site_ad)
        .select_related("owner", "owner_group")[:20],
    }
    return render(request, "classads/site_ad_detail.html", context)


def job_ad_list(request):
    qs = JobAd.objects.visible_to(request.user).select_related("owner", "owner_group")
    filterset = JobAdFilterSet(request.GET, queryset=qs)
    return list_page(request, filterset, "classads/job_ad_list.html", name="job-ads")


def job_ad_detail(request, pk):
    job_ad = get_object_or_404(
        JobAd.objects.visible_to(request.user).select_related("owner", "owner_group"), pk=pk
    )
    ad = parse_new(job_ad.text)
    sites = [(s.name, services.live_ad(s)) for s in SiteAd.objects.order_by("id")[:ANALYSIS_SITES]]
    context = {
        "job_ad": job_ad,
        "attributes": sorted(attributes_of(ad).items()),
        "match_attrs": sorted(job_ad.match_attrs.items()),
        "nodes": job_ad.node_jobs.select_related("job"),
        "analysis": match_analysis.analyse(ad, sites),
        "can_act": may_act_on(request.user, job_ad),
        "more_sites": SiteAd.objects.count() > ANALYSIS_SITES,
    }
    return render(request, "classads/job_ad_detail.html", context)


def _act(request, pk, fn, verb):
    job_ad = get_object_or_404(
        JobAd.objects.visible_to(request.user).select_related("owner_group"), pk=pk
    )
    if not may_act_on(request.user, job_ad):
        raise PermissionDenied
    try:
        fn(job_ad.pk, request.user)
        messages.success(request, f"Job ad {job_ad.pk} {verb}.")
    except services.JobAdActionError as exc:
        messages.error(request, str(exc))
    return redirect("classads:job-ad-detail", pk=job_ad.pk)


@require_POST
def job_ad_release(request, pk):
    return _act(request, pk, services.release, "released")


@require_POST
def job_ad_remove(request, pk):
    return _act(request, pk, services.remove, "removed")


def negotiation(request):
    runs = CycleRun.objects.filter(kind="negotiator")
    page = paginate(request, runs)
    recent = [
        {
            "at": r.started,
            "matches": (r.counts or {}).get("matches", 0),
            "seconds": r.duration_s or 0.0,
        }
        for r in runs.filter(status="success").order_by("-started")[:100]
    ][::-1]
    context = {
        "page": page,
        "chart": to_html(charts.negotiation_figure(recent)) if recent else "",
        "monitor_runs": CycleRun.objects.filter(kind="matchmaker_monitor")[:10],
    }
    return render(request, "classads/negotiation.html", context)
