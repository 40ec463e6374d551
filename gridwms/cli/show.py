"""What the command prints: messages, JSON, the jobs table, times as "3 min ago"."""

from __future__ import annotations

import datetime
import json
import sys
from collections import Counter
from typing import Any

# A server clock this far ahead of the user's is taken for a simulated one (make run's clock
# runs faster than real time), not for a badly set watch.
CLOCK_SKEW_SECONDS = 60
SERVER_CLOCK = "(server clock)"
SIMULATED_CLOCK = "(simulated clock)"

COLUMNS = [
    ("ID", "id", 10),
    ("NAME", "name", 32),
    ("STATUS", "status", 12),
    ("SITE", "site", 24),
    ("REASON", "status_reason", 56),
    ("CHANGED", "status_changed", 34),
]
# The order states are counted in: by how far along a job is.
STATE_ORDER = (
    "pending defined assigned throttled activated sent starting running holding transferring "
    "finished failed cancelled closed"
).split()


def say(message: str) -> None:
    print(f"gridwms: {message}", file=sys.stderr)


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


# --- times ---------------------------------------------------------------------------------------


def parse_time(value: Any) -> datetime.datetime | None:
    try:
        when = datetime.datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.UTC)


def ago(seconds: float) -> str:
    """'just now', '40 s ago', '3 min ago', '2 h ago', '5 d ago' (whole units, rounded down)."""
    if seconds < 5:
        return "just now"
    size, unit = next(
        u for u in ((86400, "d"), (3600, "h"), (60, "min"), (1, "s")) if seconds >= u[0]
    )
    return f"{int(seconds // size)} {unit} ago"


def when(value: Any, now: datetime.datetime | None = None) -> str:
    """A server's timestamp as the time elapsed since, by the user's own clock. The API gives
    the times of the server's clock, which may be the simulated grid's (faster than real time,
    so ahead of the user's): a time ahead of the user's clock is never shown as "in 5 min" but
    as that clock's time, labelled."""
    stamp = parse_time(value)
    if stamp is None:
        return str(value)
    now = now or datetime.datetime.now(datetime.UTC)
    age = (now - stamp).total_seconds()
    if age < -CLOCK_SKEW_SECONDS:
        return f"{stamp.astimezone():%Y-%m-%d %H:%M} {SERVER_CLOCK}"
    return ago(max(age, 0.0))


def stamp(row: dict, key: str) -> str:
    """A job's (or a change's) time `key` as elapsed real time: from `<key>_real`, the wall-clock
    moment the server gives beside a time of its own clock; without that field (an older
    server), from the time itself, labelled when the server says its clock is simulated."""
    real = f"{key}_real"
    if row.get(real):
        return when(row[real])
    value = row.get(key)
    moment = parse_time(value)
    if moment is None:
        return "-" if value in (None, "") else str(value)
    if real in row or row.get("clock") == "simulated":  # the real moment is not known
        return f"{moment.astimezone():%Y-%m-%d %H:%M} {SIMULATED_CLOCK}"
    return when(value)


def duration(seconds: float) -> str:
    """'45 s', '12 min', '1 h 30 min'."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    hours, minutes = divmod(seconds // 60, 60)
    return f"{hours} h" + (f" {minutes} min" if minutes else "")


# --- the jobs table ------------------------------------------------------------------------------


def print_table(rows: list[dict], reasons: dict[int, str] | None = None) -> None:
    """A row per job; `reasons` replaces the REASON of the jobs it names (why a waiting job
    waits)."""
    reasons = reasons or {}
    cells = [
        [_cell(job, key, width, reasons.get(job.get("id"))) for _, key, width in COLUMNS]
        for job in rows
    ]
    header = [title for title, _, _ in COLUMNS]
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]
    for row in [header, *cells]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def _cell(job: dict, key: str, width: int, reason: str | None) -> str:
    value = reason if key == "status_reason" and reason else job.get(key)
    if value in (None, ""):
        return "-"
    text = stamp(job, key) if key == "status_changed" else str(value)
    text = " ".join(text.split())  # one line per job
    return text if len(text) <= width else text[: width - 1] + "…"


def count_states(jobs: list[dict]) -> str:
    """'7 finished, 2 running, 1 failed', in the order a job goes through its states."""
    counts = Counter(str(job.get("status")) for job in jobs)
    order = {state: n for n, state in enumerate(STATE_ORDER)}
    states = sorted(counts, key=lambda s: (order.get(s, len(order)), s))
    return ", ".join(f"{counts[s]} {s}" for s in states) or "no jobs"
