"""What a pilot tells of itself: the worker node it runs on and the lines it logs, kept
bounded (its last MAX_LINES lines), as the pilot page shows them. A real pilot reports them
through the API (registration, POST /api/v1/pilots/{id}/log/); a simulated pilot's CE records
them (simulation/simulated_ce.py)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from django.db import transaction

from core import clock
from pilots.models import Pilot, PilotLogLine

MAX_LINES = 500  # per pilot: older lines are dropped as new ones come
MAX_LINES_PER_REPORT = 100
MAX_LINE_CHARS = 1024
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
NODE_KEYS = 16  # a node description holds at most this many keys
NODE_VALUE_CHARS = 255


def clean_node(node: dict) -> dict:
    """A node description as stored: at most NODE_KEYS keys, each value a number, a
    boolean or text cut to NODE_VALUE_CHARS (NUL characters dropped)."""
    out: dict = {}
    for key, value in list(node.items())[:NODE_KEYS]:
        name = _text(key)[:64]
        if isinstance(value, bool) or (isinstance(value, int) and abs(value) < 2**53):
            out[name] = value
        elif isinstance(value, float) and math.isfinite(value):
            out[name] = value
        elif value is not None:
            out[name] = _text(value)[:NODE_VALUE_CHARS]
    return out


def _text(value: object) -> str:
    return str(value).replace("\x00", "")  # PostgreSQL's jsonb holds no NUL


def set_node(pilot_id: int, hostname: str, node: dict | None = None) -> int:
    """The worker node the pilot runs on: its host name and its description (cores, memory,
    OS, pilot version). Returns the number of pilots updated (0 or 1)."""
    fields: dict = {"hostname": hostname[:255]}
    if node is not None:
        fields["node"] = clean_node(node)
    return Pilot.objects.filter(pk=pilot_id).update(**fields)


def record(
    pilot_id: int,
    lines: Iterable[str | tuple[str, str]],
    job_id: int | None = None,
    at=None,
) -> int:
    """Append lines to the pilot's log (each text, or (level, text)), then keep only its last
    MAX_LINES. Returns the number of lines written."""
    now = at or clock.now()
    rows = []
    for line in lines:
        level, text = line if isinstance(line, tuple) else ("INFO", line)
        level = level.upper() if level.upper() in LEVELS else "INFO"
        rows.append(
            PilotLogLine(
                pilot_id=pilot_id,
                at=now,
                level=level,
                job_id=job_id,
                message=text[:MAX_LINE_CHARS],
            )
        )
    if not rows:
        return 0
    with transaction.atomic():
        PilotLogLine.objects.bulk_create(rows)
        _trim(pilot_id)
    return len(rows)


def _trim(pilot_id: int) -> None:
    oldest_kept = (
        PilotLogLine.objects.filter(pilot_id=pilot_id)
        .order_by("-id")
        .values_list("id", flat=True)[MAX_LINES - 1 : MAX_LINES]
    )
    first = list(oldest_kept)
    if first:
        PilotLogLine.objects.filter(pilot_id=pilot_id, id__lt=first[0]).delete()


def lines_of(pilot_id: int, limit: int = MAX_LINES):
    """The pilot's log, oldest first (its last `limit` lines)."""
    last = PilotLogLine.objects.filter(pilot_id=pilot_id).order_by("-id")[:limit]
    return sorted(last, key=lambda line: line.pk)
