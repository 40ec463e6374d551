"""The project's extension points, every store declared here and nowhere else.

An app adds to a store from its own modules (a cycle with `core.cycles.cycle`, a live
parameter with `core.gdpconfig.register`, a /metrics collector with `core.metrics.register`),
so the base app can run, list or scrape what the apps above it define without importing them.
The set of stores is fixed: a new extension point is a new line here, reviewed as such.
Everything else the pages show of several apps is a plain call from the web layer
(docs/developer-guide.md, Where code goes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

# kind -> the cycle's body (core.cycles: run_cycle, the schedules, /healthz, run_cycle command)
CYCLES: dict[str, Callable[[], dict[str, Any]]] = {}
# name -> gdpconfig.Param (core.gdpconfig: typed, validated, versioned live parameters)
PARAMETERS: dict[str, Any] = {}
# "module.qualname" -> a function yielding prometheus_client metric families (/metrics)
METRICS_COLLECTORS: dict[str, Callable[[], Iterable[Any]]] = {}

STORES: Mapping[str, dict] = MappingProxyType(
    {
        "cycles": CYCLES,
        "parameters": PARAMETERS,
        "metrics_collectors": METRICS_COLLECTORS,
    }
)
