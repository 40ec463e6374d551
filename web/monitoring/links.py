"""Links into the filtered lists (the jobs list's and the pilots list's own parameters:
web.matcher.filters.JobFilterSet, web.pilots.filters.PilotFilterSet). A parameter with an empty
value is left out: the lists read it as "no filter"."""

from __future__ import annotations

import datetime
from urllib.parse import urlencode


def _query(path: str, params: dict) -> str:
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return f"{path}?{urlencode(kept, doseq=True)}" if kept else path


def instant(value: datetime.datetime) -> str:
    """An instant as the lists' `since` parameter reads it (ISO 8601, UTC as Z)."""
    text = value.astimezone(datetime.UTC).replace(microsecond=0).isoformat()
    return text.removesuffix("+00:00") + "Z"


NOT_PLACED = "none"  # JobFilterSet's `placed` value for jobs at no site


def jobs(**params) -> str:
    """/jobs/?placed=...&status=...: the names are JobFilterSet's (placed, status, owner, task,
    task_queue, since); `placed` is the site exactly, "none" for jobs at no site."""
    return _query("/jobs/", params)


def pilots(**params) -> str:
    """/pilots/?site=...&ce=...&status=...: PilotFilterSet's names."""
    return _query("/pilots/", params)
