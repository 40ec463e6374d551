import django_filters

from brokerage.models import BrokerageRun, PandaQueue, Task, TaskStatus
from config.filters import StrictFilterSet


class TaskFilterSet(StrictFilterSet):
    status = django_filters.MultipleChoiceFilter(choices=TaskStatus.choices)
    kind = django_filters.ChoiceFilter(choices=Task.Kind.choices)
    nucleus = django_filters.CharFilter(field_name="nucleus__name")
    owner = django_filters.CharFilter(field_name="owner__username")
    name = django_filters.CharFilter(lookup_expr="icontains")
    processing_type = django_filters.CharFilter()
    gshare = django_filters.CharFilter()

    class Meta:
        model = Task
        fields = ["status", "kind", "nucleus", "owner", "name", "processing_type", "gshare"]


class PandaQueueFilterSet(StrictFilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")
    site = django_filters.CharFilter(field_name="site__name")
    nucleus = django_filters.CharFilter(field_name="nucleus__name")
    status = django_filters.ChoiceFilter(choices=PandaQueue.Status.choices)
    queue_type = django_filters.ChoiceFilter(choices=PandaQueue.Type.choices)

    class Meta:
        model = PandaQueue
        fields = ["name", "site", "nucleus", "status", "queue_type"]


class BrokerageRunFilterSet(StrictFilterSet):
    task = django_filters.NumberFilter(field_name="task_id")
    kind = django_filters.ChoiceFilter(choices=BrokerageRun.Kind.choices)
    outcome = django_filters.CharFilter()

    class Meta:
        model = BrokerageRun
        fields = ["task", "kind", "outcome"]
