"""The pilot's own log, told to gridwms: each message is written to stderr as before and kept
until the next flush, which posts the lines to POST /api/v1/pilots/{id}/log/ (the pilot page
shows them). Bounded: at most MAX_PENDING lines wait (the oldest are dropped, and a line says
how many), at most PER_REPORT go in one request. A lost flush is logged to stderr only.

The worker node's description, sent with the registration, is here too. Standard library
only, as the rest of the client."""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from collections import deque
from collections.abc import Callable

from .transport import Client

MAX_PENDING = 1000
PER_REPORT = 100  # the server's MAX_LINES_PER_REPORT
MAX_CHARS = 1024
VERSION = "gridwms-pilot 1.0"

# PanDA pilot error codes the client gives itself (the server's table: matcher/errors.py).
STAGE_IN_FAILED = 1099
REACHED_MAX_TIME = 1213


def node() -> tuple[str, dict]:
    """(this worker node's host name, its description)."""
    memory_mb = None
    try:
        memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError, AttributeError):
        pass
    description: dict = {
        "cores": os.cpu_count() or 1,
        "os": f"{platform.system()} {platform.release()}"[:255],
        "cpu": (platform.processor() or platform.machine())[:255],
        "python": platform.python_version(),
        "pilot_version": VERSION,
    }
    if memory_mb:
        description["memory_mb"] = memory_mb
    return socket.gethostname()[:255], description


class Logbook:
    def __init__(self, client: Client, path: str, echo: Callable[[str], None] | None = None):
        self.client = client
        self.path = path  # /api/v1/pilots/{id}/log/
        self.echo = echo or (lambda text: print(text, file=sys.stderr, flush=True))
        self.pending: deque[dict] = deque(maxlen=MAX_PENDING)
        self.dropped = 0

    def add(self, message: str, level: str = "INFO", job_id: int | None = None) -> None:
        self.echo(f"{time.strftime('%H:%M:%S')} {level} {message}")
        if len(self.pending) == MAX_PENDING:
            self.dropped += 1
        line = {"level": level, "message": message[:MAX_CHARS] or "-", "job_id": job_id}
        self.pending.append(line)

    def flush(self) -> None:
        if self.dropped:
            note = f"{self.dropped} earlier lines dropped (more than {MAX_PENDING} waited)"
            self.pending.appendleft({"level": "WARNING", "message": note, "job_id": None})
            self.dropped = 0
        while self.pending:
            batch = [self.pending.popleft() for _ in range(min(PER_REPORT, len(self.pending)))]
            try:
                status, answer = self.client.post(self.path, {"lines": batch})
            except OSError as exc:
                self.echo(f"the log could not be sent: {exc}")
                return
            if status >= 400:
                self.echo(f"the log was answered {status} {answer}")
                return
