"""The cycle runs list's FilterSet, shared by the Cycles page and the API."""

import django_filters

from core.models import CycleRun
from web.core.listing import ListFilterSet, SearchFilter, SortFilter, time_range


class CycleRunFilterSet(ListFilterSet):
    q = SearchFilter(ids=("id",), text=("kind", "host"), help_text="a run's id, kind or host")
    # Exact; the page offers the kinds that have run (the API takes any name: none, no row).
    kind = django_filters.CharFilter(label="Cycle")
    status = django_filters.MultipleChoiceFilter(choices=CycleRun.Status.choices, distinct=False)
    host = django_filters.CharFilter(lookup_expr="icontains", label="Host contains")
    period, since, until = time_range("started", "Started")
    ordering = SortFilter(
        fields=[
            ("id", "id"),
            ("kind", "kind"),
            ("started", "started"),
            ("status", "status"),
            ("host", "host"),
            ("real_seconds", "duration"),
        ],
        nulls={"duration": -1.0},
        field_labels={"real_seconds": "Duration (real s)"},
    )
    export_fields = {
        "id": "id",
        "kind": "kind",
        "started": "started",
        "finished": "finished",
        "real_seconds": "real_seconds",
        "status": "status",
        "host": "host",
        "counts": "counts",
        "error": "error",
    }

    class Meta:
        model = CycleRun
        fields = ["q", "kind", "status", "host", "period", "since", "until", "ordering"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.offer("kind", CycleRun.objects.order_by().values_list("kind", flat=True).distinct())
