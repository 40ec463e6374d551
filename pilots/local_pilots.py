"""The Local submit pool's pilots as processes on this machine: each is started with its output
(stdout and stderr) in a log file of its own under settings.LOCAL_PILOT_LOG_DIR, and a line
naming its exit code appended when the process ends. A local pilot that ended, or stayed
silent for LocalPilotStartSeconds, without ever registering is one the director must stop
counting as waiting: otherwise its TaskQueue stays "over its cap" and its payload jobs wait
for a pilot that will never come."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings

from core import clock

EXIT_LINE = "gridwms: pilot process exited with code "
_EXIT = re.compile(re.escape(EXIT_LINE) + r"(-?\d+)\s*$")
TAIL_BYTES = 4096


def log_dir() -> Path:
    return Path(settings.LOCAL_PILOT_LOG_DIR)


def log_path(reference: str) -> Path:
    """The log file of the local pilot with this reference (local://<ce>/<id>)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", reference.rsplit("/", 1)[-1]) or "pilot"
    return log_dir() / f"{name}.log"


def launch(args: Sequence[str], reference: str, cwd: Path) -> None:
    """Start the pilot in a session of its own, its output in its log file; the shell around it
    appends EXIT_LINE and the exit code when it ends, so that the director sees a pilot that
    died before registering without having to be the process's parent."""
    path = log_path(reference)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as out:
        subprocess.Popen(
            ["/bin/sh", "-c", f'"$@"; echo "{EXIT_LINE}$?"', "local-pilot", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def output_tail(reference: str, limit: int = TAIL_BYTES) -> str | None:
    """The end of a local pilot's output (None: no log file on this machine)."""
    path = log_path(reference)
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def exit_code(tail: str) -> int | None:
    lines = tail.rstrip().splitlines()
    match = _EXIT.search(lines[-1]) if lines else None
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Unstarted:
    pilot_id: int
    reason: str


def _last_words(tail: str) -> str:
    lines = [line for line in tail.splitlines() if line.strip() and EXIT_LINE not in line]
    return lines[-1].strip()[:160] if lines else "no output"


def unstarted(pilots: Iterable[tuple[int, str, datetime]], start_seconds: float) -> list[Unstarted]:
    """Of local pilots still Submitted, (id, reference, when submitted), those that will never
    register: their process ended, or they were submitted start_seconds of real time ago and
    are still silent. A pilot whose log is not on this machine is left alone."""
    out = []
    for pilot_id, reference, submitted in pilots:
        tail = output_tail(reference)
        if tail is None:
            continue
        code = exit_code(tail)
        if code is not None:
            out.append(
                Unstarted(
                    pilot_id,
                    f"its process exited (code {code}) before registering: {_last_words(tail)}",
                )
            )
            continue
        age = clock.real_age(submitted, at_least=True)
        if age is not None and age > start_seconds:
            out.append(Unstarted(pilot_id, f"it did not register within {start_seconds:.0f} s"))
    return out
