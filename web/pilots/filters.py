"""The pilots page's filters, shared with the API."""

import django_filters

from pilots.models import Pilot, PilotStatus
from web.core.listing import ListFilterSet, SearchFilter, SortFilter, time_range
from web.matcher.filters import IdFilter


class PilotFilterSet(ListFilterSet):
    q = SearchFilter(ids=("id",), text=("reference",), help_text="a pilot's id or reference")
    status = django_filters.MultipleChoiceFilter(choices=PilotStatus.choices, distinct=False)
    site = django_filters.CharFilter()
    ce = django_filters.CharFilter(label="CE")
    task_queue = IdFilter(field_name="task_queue_id", label="TaskQueue")
    submit_pool = django_filters.CharFilter()
    private = django_filters.BooleanFilter(label="Private")
    period, since, until = time_range("submitted", "Submitted")
    ordering = SortFilter(
        fields=[
            ("id", "id"),
            ("reference", "reference"),
            ("status", "status"),
            ("task_queue_id", "task_queue"),
            ("private", "kind"),
            ("owner_group", "group"),
            ("submit_pool", "submit_pool"),
            ("site", "site"),
            ("ce", "ce"),
            ("jobs_done", "jobs"),
            ("submitted", "submitted"),
            ("status_changed", "status_changed"),
        ],
        field_labels={
            "task_queue_id": "TaskQueue",
            "private": "Kind",
            "ce": "CE",
            "jobs_done": "Jobs",
            "status_changed": "Changed",
        },
    )
    export_fields = {
        "id": "id",
        "reference": "reference",
        "status": "status",
        "task_queue": "task_queue_id",
        "private": "private",
        "owner_dn": "owner_dn",
        "group": "owner_group",
        "submit_pool": "submit_pool",
        "site": "site",
        "ce": "ce",
        "jobs": "jobs_done",
        "submitted": "submitted",
        "status_changed": "status_changed",
    }

    class Meta:
        model = Pilot
        fields = [
            "q",
            "status",
            "site",
            "ce",
            "task_queue",
            "submit_pool",
            "private",
            "period",
            "since",
            "until",
            "ordering",
        ]
