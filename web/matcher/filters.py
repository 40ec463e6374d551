"""FilterSets shared by the HTML lists and the API."""

import json

import django_filters
from django import forms
from django.db.models import Q

from matcher.models import Job, JobStatus, Site, TaskQueue
from shares.models import GridGroup
from web.core.filters import InstantFilter
from web.core.listing import ListFilterSet, SearchFilter, SortFilter, time_range


def _listed(field: str, value: str) -> Q:
    # Lists are stored as canonical JSON; a quoted element matches exactly one entry.
    return Q(**{f"{field}__icontains": json.dumps(value)})


class IdFilter(django_filters.NumberFilter):
    """A whole number that fits an id column: anything else answers 400 naming the filter
    (a 20-digit number reached the database and overflowed its integer: a 500)."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", 2**63 - 1)
        super().__init__(*args, **kwargs)


NOT_PLACED = "none"  # the `placed` filter's value for a job no site took yet


class JobFilterSet(ListFilterSet):
    # distinct=False: the status is a column of the job, so no row repeats; the default
    # SELECT DISTINCT over every column made PostgreSQL sort all matching jobs before LIMIT.
    status = django_filters.MultipleChoiceFilter(choices=JobStatus.choices, distinct=False)
    owner = django_filters.CharFilter(field_name="owner__username", label="Owner (user name)")
    group = django_filters.CharFilter(field_name="owner_group__name", label="Group")
    site = django_filters.CharFilter(
        method="filter_site", label="Site", help_text="matched there, or asking for it"
    )
    # Where it is or was placed, exactly (the summaries' cells link here); "none": not placed.
    placed = django_filters.CharFilter(
        method="filter_placed", label="Placed at", help_text='its site exactly; "none": not placed'
    )
    reason = django_filters.CharFilter(
        field_name="status_reason", label="Reason", help_text="its status reason, exactly"
    )
    # Why a failed job failed (matcher.errors): the error summary's rows link here.
    error_code = django_filters.NumberFilter(
        field_name="error_code",
        label="Error code",
        min_value=0,
        max_value=2**31 - 1,
        help_text="PanDA's pilot error code, e.g. 1305",
    )
    error_category = django_filters.CharFilter(
        field_name="error_category", label="Error category", help_text="e.g. stage-in"
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
    q = SearchFilter(
        ids=("id", "task_job__task_id"),
        text=("name", "task_job__task__name"),
        help_text="a job or task id, or part of a job or task name",
    )
    # The main timestamp: when the job last changed state (BigPanDA's modification time).
    period, since, until = time_range("status_changed", "Changed")
    # Every column of the page; each is indexed with id (migration 0011) but owner and group,
    # sorted by name through a join.
    ordering = SortFilter(
        fields=[
            ("id", "id"),
            ("name", "name"),
            ("owner__username", "owner"),
            ("owner_group__name", "group"),
            ("status", "status"),
            ("cpu_time", "cpu_time"),
            ("user_priority", "user_priority"),
            ("task_queue_id", "task_queue"),
            ("site", "site"),
            ("created", "created"),
            ("status_changed", "status_changed"),
        ],
        nulls={"task_queue": 0},
        field_labels={
            "cpu_time": "CPU time",
            "user_priority": "UserPriority",
            "task_queue_id": "TaskQueue",
            "created": "Submitted",
            "status_changed": "Changed",
        },
    )
    export_fields = {
        "id": "id",
        "name": "name",
        "owner": "owner__username",
        "group": "owner_group__name",
        "status": "status",
        "status_reason": "status_reason",
        "cpu_time": "cpu_time",
        "user_priority": "user_priority",
        "task_queue": "task_queue_id",
        "task": "task_job__task_id",
        "site": "site",
        "grid_ce": "grid_ce",
        "pilot_reference": "pilot_reference",
        "created": "created",
        "status_changed": "status_changed",
    }

    class Meta:
        model = Job
        fields = [
            "q",
            "status",
            "owner",
            "group",
            "site",
            "placed",
            "reason",
            "error_code",
            "error_category",
            "task_queue",
            "task",
            "created_after",
            "created_before",
            "period",
            "since",
            "until",
            "ordering",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.offer("group", GridGroup.objects.values_list("name", flat=True))
        self.offer("site", Site.objects.values_list("name", flat=True))

    def filter_site(self, queryset, name, value):
        return queryset.filter(Q(site=value) | _listed("sites", value))

    def filter_placed(self, queryset, name, value):
        return queryset.filter(site="" if value == NOT_PLACED else value)


class TaskQueueFilterSet(ListFilterSet):
    owner = django_filters.CharFilter(field_name="owner__username", label="Owner (user name)")
    group = django_filters.CharFilter(field_name="owner_group__name", label="Group")
    cpu_time = django_filters.NumberFilter(field_name="cpu_time", label="CPU segment")
    site = django_filters.CharFilter(
        method="filter_site",
        label="Site",
        help_text="TaskQueues that a pilot at this site may take",
    )
    q = SearchFilter(ids=("id",), help_text="a TaskQueue id")
    period, since, until = time_range("created", "Created")
    ordering = SortFilter(
        fields=[
            ("id", "id"),
            ("owner__username", "owner"),
            ("owner_group__name", "group"),
            ("setup", "setup"),
            ("cpu_time", "cpu_time"),
            ("priority", "priority"),
            ("created", "created"),
        ]
    )
    export_fields = {
        "id": "id",
        "owner": "owner__username",
        "group": "owner_group__name",
        "setup": "setup",
        "cpu_time": "cpu_time",
        "sites": "sites",
        "platforms": "platforms",
        "tags": "tags",
        "priority": "priority",
        "waiting": "waiting_jobs",
        "created": "created",
    }

    class Meta:
        model = TaskQueue
        fields = ["q", "owner", "group", "cpu_time", "site", "period", "since", "until", "ordering"]

    def filter_site(self, queryset, name, value):
        # No Sites restriction means any site; a banned site is excluded.
        return queryset.filter(Q(sites=[]) | _listed("sites", value)).exclude(
            _listed("banned_sites", value)
        )
