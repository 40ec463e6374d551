"""pilots' figures on /metrics, read from the database at scrape time (core/metrics.py's
registry; registered when PilotsConfig.ready() imports this module): the pilots by status."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily

from core import metrics


@metrics.register
def collect() -> Iterator[GaugeMetricFamily]:
    from pilots.models import Pilot

    pilots = GaugeMetricFamily("gridwms_pilots", "Pilots by status.", labels=["status"])
    for status, n in Pilot.objects.values_list("status").annotate(n=Count("id")).order_by():
        pilots.add_metric([status], n)
    yield pilots
