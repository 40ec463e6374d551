"""The pilots page's filters, shared with the API."""

import django_filters

from config.filters import StrictFilterSet
from matcher.filters import IdFilter
from pilots.models import Pilot, PilotStatus


class PilotFilterSet(StrictFilterSet):
    status = django_filters.MultipleChoiceFilter(choices=PilotStatus.choices, distinct=False)
    site = django_filters.CharFilter()
    ce = django_filters.CharFilter(label="CE")
    task_queue = IdFilter(field_name="task_queue_id", label="TaskQueue")
    submit_pool = django_filters.CharFilter()

    class Meta:
        model = Pilot
        fields = ["status", "site", "ce", "task_queue", "submit_pool"]
