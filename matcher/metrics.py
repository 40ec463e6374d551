"""matcher's figures on /metrics, read from the database at scrape time (core/metrics.py's
registry; registered in MatcherConfig.ready()): the waiting jobs and the TaskQueues."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Sum
from prometheus_client.core import GaugeMetricFamily

from matcher.models import TaskQueue, TaskQueuePriorityCount


def collect() -> Iterator[GaugeMetricFamily]:
    waiting = TaskQueuePriorityCount.objects.aggregate(n=Sum("jobs"))["n"] or 0
    yield GaugeMetricFamily(
        "gridwms_waiting_jobs", "Jobs waiting in TaskQueues for a pilot.", value=waiting
    )
    yield GaugeMetricFamily(
        "gridwms_taskqueues",
        "TaskQueues (groups of identical requirements).",
        value=TaskQueue.objects.count(),
    )
