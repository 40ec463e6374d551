"""The figures GET /metrics shows in Prometheus's text format (prometheus_client); the view, who
may read it and the timing of each request are the pages' (web/core/metrics.py).

Two kinds of figures:
- per request, counted where they happen: request latency (observe_request), the
  match latency and its outcome (claimed / empty). Under gunicorn every worker writes them to
  PROMETHEUS_MULTIPROC_DIR (set by gridwms/gunicorn.conf.py or gridwms/webserver.py) and a
  scrape sums the workers, so one scrape of a host is the whole host;
- state of the installation, read from the database at scrape time (the same on every host,
  whichever process ran the work): here the cycle runs and their durations per kind and status
  over the last RECENT_HOURS (gauges: retention deletes old runs) and the age of each cycle's
  last success; each app adds its own with `register` from its AppConfig.ready() (the waiting
  jobs and TaskQueues: matcher/metrics.py; the pilots by status: pilots/metrics.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import timedelta

from django.db.models import Avg, Count, Max
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric

from core import registry

RECENT_HOURS = 24  # the window of the cycle-run gauges

_LATENCY_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)

REQUEST_LATENCY = Histogram(
    "gridwms_http_request_duration_seconds",
    "Time to answer an HTTP request, by method, route pattern and status code.",
    ["method", "route", "status"],
    buckets=_LATENCY_BUCKETS,
)
MATCH_LATENCY = Histogram(
    "gridwms_match_duration_seconds",
    "Time the matcher took to give a pilot a job or to find none (inside the request).",
    buckets=_LATENCY_BUCKETS,
)
MATCHES = Counter(
    "gridwms_matches",
    "Pilots' match requests by outcome: claimed (a job was given) or empty (none fits).",
    ["result"],
)
_CLAIMED, _EMPTY = MATCHES.labels("claimed"), MATCHES.labels("empty")


def observe_match(seconds: float, claimed: bool) -> None:
    MATCH_LATENCY.observe(seconds)
    (_CLAIMED if claimed else _EMPTY).inc()


_request_children: dict = {}


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    key = (method, route, status)
    child = _request_children.get(key)
    if child is None:  # labels() costs a lock and a tuple; remember each child
        child = _request_children[key] = REQUEST_LATENCY.labels(*key)
    child.observe(seconds)


Collect = Callable[[], Iterable[Metric]]

# Each app's figures read from the database at scrape time, by name (registered once per name).
COLLECTORS: dict[str, Collect] = registry.METRICS_COLLECTORS  # the store (core/registry.py)


def register(collect: Collect) -> Collect:
    """Add an app's scrape-time figures: `collect()` yields metric families (GaugeMetricFamily)
    read from the database. Called from the app's AppConfig.ready(); usable as a decorator."""
    COLLECTORS[f"{collect.__module__}.{collect.__qualname__}"] = collect
    return collect


class DatabaseCollector:
    """The installation's state at scrape time, from the database: every app's registered
    figures, then the cycles'."""

    def collect(self):
        for collect in COLLECTORS.values():
            yield from collect()
        yield from cycle_metrics()


def cycle_metrics() -> Iterable[Metric]:
    """The cycle runs of the last RECENT_HOURS and the age of each cycle's last success."""
    from core import clock
    from core.models import CycleRun
    from core.schedules import SCHEDULES

    # Gauges over a window, not counters: the retention cycle deletes old CycleRun rows, so
    # a count of all rows would go down, which Prometheus reads as a counter reset.
    now = clock.now()
    window = f"in the last {RECENT_HOURS} hours"
    runs = GaugeMetricFamily(
        "gridwms_cycle_runs_recent",
        f"Cycle runs started {window}, by kind and status.",
        labels=["kind", "status"],
    )
    mean = GaugeMetricFamily(
        "gridwms_cycle_recent_mean_duration_seconds",
        f"Mean duration (real seconds) of cycle runs started {window} and finished.",
        labels=["kind", "status"],
    )
    longest = GaugeMetricFamily(
        "gridwms_cycle_recent_max_duration_seconds",
        f"Longest duration (real seconds) of cycle runs started {window} and finished.",
        labels=["kind", "status"],
    )
    rows = (
        CycleRun.objects.filter(started__gte=now - timedelta(hours=RECENT_HOURS))
        .values_list("kind", "status")
        .annotate(n=Count("id"), avg=Avg("real_seconds"), top=Max("real_seconds"))
        .order_by()
    )
    for kind, status, n, avg, top in rows:
        runs.add_metric([kind, status], n)
        if avg is not None:
            mean.add_metric([kind, status], avg)
            longest.add_metric([kind, status], top)
    yield runs
    yield mean
    yield longest

    age = GaugeMetricFamily(
        "gridwms_cycle_last_success_age_seconds",
        "Seconds since each scheduled cycle last succeeded (absent: never).",
        labels=["kind"],
    )
    interval = GaugeMetricFamily(
        "gridwms_cycle_interval_seconds", "Each cycle's schedule.", labels=["kind"]
    )
    last = dict(
        CycleRun.objects.filter(status=CycleRun.Status.SUCCESS)
        .values_list("kind")
        .annotate(at=Max("finished"))
        .order_by()
    )
    for kind, minutes in SCHEDULES.items():
        interval.add_metric([kind], minutes * 60)
        if last.get(kind):
            age.add_metric([kind], (now - last[kind]).total_seconds())
    yield age
    yield interval


def process_registry() -> CollectorRegistry:
    """The per-request figures: this process's, or every worker's of the host (multiprocess)."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(REGISTRY)
    return registry


def scrape() -> bytes:
    """Every figure, in Prometheus's text format."""
    registry = process_registry()
    registry.register(DatabaseCollector())
    return generate_latest(registry)
