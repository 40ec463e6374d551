"""FilterSets shared by the ClassAd pages and the API."""

import django_filters

from classads.models import JobAd, JobAdStatus, SiteAd
from web.core.listing import ListFilterSet, SearchFilter, SortFilter, time_range


class SiteAdFilterSet(ListFilterSet):
    q = SearchFilter(ids=("id",), text=("name", "site"), help_text="an ad's #, Name or site")
    name = django_filters.CharFilter(lookup_expr="icontains", label="Name contains")
    site = django_filters.CharFilter(label="DIRAC site")
    want_ad_revaluate = django_filters.BooleanFilter(label="WantAdRevaluate")
    period, since, until = time_range("advertised", "Advertised")
    ordering = SortFilter(
        fields=[
            ("id", "id"),
            ("name", "name"),
            ("site", "site"),
            ("cur_matches", "cur_matches"),
            ("max_matches", "max_matches"),
            ("want_ad_revaluate", "want_ad_revaluate"),
            ("sequence", "sequence"),
            ("advertised", "advertised"),
        ],
        nulls={"cur_matches": -1, "max_matches": -1, "sequence": -1},
        field_labels={
            "cur_matches": "CurMatches",
            "max_matches": "MaxMatches",
            "want_ad_revaluate": "WantAdRevaluate",
            "sequence": "UpdateSequenceNumber",
        },
    )
    export_fields = {
        "id": "id",
        "name": "name",
        "site": "site",
        "cur_matches": "cur_matches",
        "max_matches": "max_matches",
        "want_ad_revaluate": "want_ad_revaluate",
        "sequence": "sequence",
        "advertised": "advertised",
    }

    class Meta:
        model = SiteAd
        fields = ["q", "name", "site", "want_ad_revaluate", "period", "since", "until", "ordering"]


class JobAdFilterSet(ListFilterSet):
    q = SearchFilter(ids=("id",), text=("name",), help_text="an ad's id or part of its name")
    status = django_filters.MultipleChoiceFilter(choices=JobAdStatus.choices, distinct=False)
    owner = django_filters.CharFilter(field_name="owner__username", label="Owner (user name)")
    group = django_filters.CharFilter(field_name="owner_group__name", label="Group")
    site_ad = django_filters.CharFilter(field_name="site_ad_name", label="Site ad Name")
    is_dag = django_filters.BooleanFilter(label="DAG")
    period, since, until = time_range("created", "Submitted")
    ordering = SortFilter(
        fields=[
            ("id", "id"),
            ("is_dag", "kind"),
            ("name", "name"),
            ("owner__username", "owner"),
            ("owner_group__name", "group"),
            ("status", "status"),
            ("site_ad_name", "site_ad"),
            ("rank", "rank"),
            ("created", "created"),
        ],
        nulls={"rank": -1e300},
        field_labels={"is_dag": "Kind", "site_ad_name": "Site ad", "created": "Submitted"},
    )
    export_fields = {
        "id": "id",
        "dag": "is_dag",
        "name": "name",
        "owner": "owner__username",
        "group": "owner_group__name",
        "status": "status",
        "hold_reason": "hold_reason",
        "site_ad": "site_ad_name",
        "site": "site",
        "rank": "rank",
        "matched": "matched",
        "created": "created",
    }

    class Meta:
        model = JobAd
        fields = [
            "q",
            "status",
            "owner",
            "group",
            "site_ad",
            "is_dag",
            "period",
            "since",
            "until",
            "ordering",
        ]
