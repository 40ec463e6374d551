"""FilterSets shared by the ClassAd pages and the API."""

import django_filters

from classads.models import JobAd, JobAdStatus, SiteAd
from config.filters import StrictFilterSet


class SiteAdFilterSet(StrictFilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains", label="Name contains")
    site = django_filters.CharFilter(label="DIRAC site")
    want_ad_revaluate = django_filters.BooleanFilter(label="WantAdRevaluate")

    class Meta:
        model = SiteAd
        fields = ["name", "site", "want_ad_revaluate"]


class JobAdFilterSet(StrictFilterSet):
    status = django_filters.MultipleChoiceFilter(choices=JobAdStatus.choices, distinct=False)
    owner = django_filters.CharFilter(field_name="owner__username", label="Owner (user name)")
    group = django_filters.CharFilter(field_name="owner_group__name", label="Group")
    site_ad = django_filters.CharFilter(field_name="site_ad_name", label="Site ad Name")
    is_dag = django_filters.BooleanFilter(label="DAG")

    class Meta:
        model = JobAd
        fields = ["status", "owner", "group", "site_ad", "is_dag"]
