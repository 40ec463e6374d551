"""The timeout actions list's FilterSet, shared by its page and the API."""

import django_filters

from matcher.models import JobStatus
from timeouts import rules
from timeouts.models import TimeoutAction
from web.core.listing import ListFilterSet, SearchFilter, SortFilter, time_range
from web.matcher.filters import IdFilter


class TimeoutActionFilterSet(ListFilterSet):
    q = SearchFilter(ids=("job_id",), text=("queue", "reason"), help_text="a job id, a queue "
                     "or part of the reason")  # fmt: skip
    rule = django_filters.MultipleChoiceFilter(
        choices=[(r, rules.RULE[r].title) for r in rules.RULE_NAMES],
        distinct=False,
    )
    job = IdFilter(field_name="job_id", label="Job")
    from_status = django_filters.MultipleChoiceFilter(
        choices=JobStatus.choices, distinct=False, label="From state"
    )
    to_status = django_filters.MultipleChoiceFilter(
        choices=JobStatus.choices, distinct=False, label="To state"
    )
    queue = django_filters.CharFilter(label="Queue")
    period, since, until = time_range("at", "Acted")
    ordering = SortFilter(
        fields=[
            ("id", "id"),
            ("at", "at"),
            ("rule", "rule"),
            ("job_id", "job"),
            ("from_status", "from_status"),
            ("to_status", "to_status"),
            ("queue", "queue"),
        ],
        field_labels={"at": "Acted", "job_id": "Job", "from_status": "From", "to_status": "To"},
    )
    export_fields = {
        "id": "id",
        "at": "at",
        "rule": "rule",
        "job": "job_id",
        "from_status": "from_status",
        "to_status": "to_status",
        "queue": "queue",
        "reason": "reason",
        "cycle_run": "cycle_run",
    }

    class Meta:
        model = TimeoutAction
        fields = [
            "q",
            "rule",
            "job",
            "from_status",
            "to_status",
            "queue",
            "period",
            "since",
            "until",
            "ordering",
        ]
