import django_filters

from brokerage.models import BrokerageRun, PandaQueue, Task, TaskStatus
from web.core.filters import StrictFilterSet
from web.core.listing import ListFilterSet, SearchFilter, SortFilter, time_range
from web.matcher.filters import IdFilter


class TaskFilterSet(ListFilterSet):
    q = SearchFilter(ids=("id",), text=("name",), help_text="a task id or part of its name")
    status = django_filters.MultipleChoiceFilter(choices=TaskStatus.choices, distinct=False)
    kind = django_filters.ChoiceFilter(choices=Task.Kind.choices)
    nucleus = django_filters.CharFilter(field_name="nucleus__name")
    owner = django_filters.CharFilter(field_name="owner__username")
    name = django_filters.CharFilter(lookup_expr="icontains")
    processing_type = django_filters.CharFilter()
    gshare = django_filters.CharFilter()
    period, since, until = time_range("modified", "Modified")
    ordering = SortFilter(
        fields=[
            ("id", "id"),
            ("name", "name"),
            ("kind", "kind"),
            ("owner__username", "owner"),
            ("processing_type", "processing_type"),
            ("priority", "priority"),
            ("status", "status"),
            ("nucleus__name", "nucleus"),
            ("created", "created"),
            ("modified", "modified"),
        ],
        nulls={"nucleus": ""},
        field_labels={"processing_type": "processingType", "modified": "Modified"},
    )
    export_fields = {
        "id": "id",
        "name": "name",
        "kind": "kind",
        "owner": "owner__username",
        "group": "owner_group__name",
        "processing_type": "processing_type",
        "gshare": "gshare",
        "priority": "priority",
        "status": "status",
        "status_reason": "status_reason",
        "nucleus": "nucleus__name",
        "created": "created",
        "modified": "modified",
    }

    class Meta:
        model = Task
        fields = [
            "q",
            "status",
            "kind",
            "nucleus",
            "owner",
            "name",
            "processing_type",
            "gshare",
            "period",
            "since",
            "until",
            "ordering",
        ]


class PandaQueueFilterSet(StrictFilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")
    site = django_filters.CharFilter(field_name="site__name")
    nucleus = django_filters.CharFilter(field_name="nucleus__name")
    status = django_filters.ChoiceFilter(choices=PandaQueue.Status.choices)
    queue_type = django_filters.ChoiceFilter(choices=PandaQueue.Type.choices)

    class Meta:
        model = PandaQueue
        fields = ["name", "site", "nucleus", "status", "queue_type"]


OUTCOMES = [(o, o) for o in ("assigned", "pending", "throttled")]


class BrokerageRunFilterSet(ListFilterSet):
    """The brokerage decisions: the page and the API."""

    q = SearchFilter(
        ids=("id", "task_id"), text=("task__name",), help_text="a decision's or task's id, or "
        "part of the task's name",
    )  # fmt: skip
    task = IdFilter(field_name="task_id", label="Task")
    kind = django_filters.ChoiceFilter(choices=BrokerageRun.Kind.choices)
    outcome = django_filters.ChoiceFilter(choices=OUTCOMES)
    period, since, until = time_range("at", "Decided")
    ordering = SortFilter(
        fields=[
            ("id", "id"),
            ("at", "at"),
            ("kind", "kind"),
            ("task_id", "task"),
            ("task__name", "task_name"),
            ("outcome", "outcome"),
        ],
        field_labels={"at": "Decided", "task_id": "Task", "task__name": "Task name"},
    )
    export_fields = {
        "id": "id",
        "at": "at",
        "kind": "kind",
        "task": "task_id",
        "task_name": "task__name",
        "outcome": "outcome",
        "chosen": "chosen",
        "message": "message",
        "removed_by": "removed_by",
    }

    class Meta:
        model = BrokerageRun
        fields = ["q", "task", "kind", "outcome", "period", "since", "until", "ordering"]
