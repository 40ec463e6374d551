"""FilterSets shared by the HTML lists and the API."""

import json

import django_filters
from django import forms
from django.db.models import Q

from config.filters import InstantFilter, StrictFilterSet
from matcher.models import Job, JobStatus, TaskQueue


def _listed(field: str, value: str) -> Q:
    # Lists are stored as canonical JSON; a quoted element matches exactly one entry and works
    # on SQLite and PostgreSQL alike.
    return Q(**{f"{field}__icontains": json.dumps(value)})


class IdFilter(django_filters.NumberFilter):
    """A whole number that fits an id column: anything else answers 400 naming the filter
    (a 20-digit number reached the database and overflowed its integer: a 500)."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", 2**63 - 1)
        super().__init__(*args, **kwargs)


class JobFilterSet(StrictFilterSet):
    # distinct=False: the status is a column of the job, so no row repeats; the default
    # SELECT DISTINCT over every column made PostgreSQL sort all matching jobs before LIMIT.
    status = django_filters.MultipleChoiceFilter(choices=JobStatus.choices, distinct=False)
    owner = django_filters.CharFilter(field_name="owner__username", label="Owner (user name)")
    group = django_filters.CharFilter(field_name="owner_group__name", label="Group")
    site = django_filters.CharFilter(
        method="filter_site", label="Site", help_text="matched there, or asking for it"
    )
    task_queue = IdFilter(field_name="task_queue_id", label="TaskQueue")
    # The jobs a brokerage task generated (brokerage's TaskJob row, reached by its reverse name).
    task = IdFilter(field_name="task_job__task_id", label="Task")
    created_after = InstantFilter(
        field_name="created", lookup_expr="gte", label="Submitted from", help_text="ISO 8601"
    )
    created_before = InstantFilter(
        field_name="created", lookup_expr="lt", label="Submitted before", help_text="ISO 8601"
    )
    ordering = django_filters.OrderingFilter(
        fields=["id", "created", "status_changed", "status", "cpu_time", "user_priority"],
        label="Order by",
    )

    class Meta:
        model = Job
        fields = [
            "status",
            "owner",
            "group",
            "site",
            "task_queue",
            "task",
            "created_after",
            "created_before",
            "ordering",
        ]

    def filter_site(self, queryset, name, value):
        return queryset.filter(Q(site=value) | _listed("sites", value))


class TaskQueueFilterSet(StrictFilterSet):
    owner = django_filters.CharFilter(field_name="owner__username", label="Owner (user name)")
    group = django_filters.CharFilter(field_name="owner_group__name", label="Group")
    cpu_time = django_filters.NumberFilter(field_name="cpu_time", label="CPU segment")
    site = django_filters.CharFilter(
        method="filter_site",
        label="Site",
        help_text="TaskQueues that a pilot at this site may take",
    )

    ordering = django_filters.OrderingFilter(
        fields=["id", "priority", "cpu_time", "created"], label="Order by"
    )

    class Meta:
        model = TaskQueue
        fields = ["owner", "group", "cpu_time", "site", "ordering"]

    def filter_site(self, queryset, name, value):
        # No Sites restriction means any site; a banned site is excluded.
        return queryset.filter(Q(sites=[]) | _listed("sites", value)).exclude(
            _listed("banned_sites", value)
        )
