"""The stall meter: how long the grid's own writes wait while something else runs beside them.

A writer thread, on its own database connection, keeps doing what pilots do all day, through the
native services: claim a waiting job (matcher.dispatcher.match_job: the job row updated, its
TaskQueue membership deleted, a status-history row inserted), report it running (a move with
its history row), send its heartbeat (an UPDATE of the job row), and report the job it held
before finished. It times every single call; the longest is the stall. When no waiting job is
left it keeps heartbeating the job it holds, so the job table is written all along.

    from stalls import StallMeter
    with StallMeter() as meter:
        stall_ms = meter.measure(lambda: run_retention())

or `measure(fn)` for one call. A call waits for a lock (a table lock of a plain CREATE INDEX,
a row another transaction holds) or for the server; the idle figure (`meter.idle_ms(1.0)`,
the same writes with nothing beside them) is what the machine itself gives. The writer is a
thread: a write waits a few ms more when the measured function busies the interpreter, never
seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Window:
    """The writes of one measured span: each call's kind and seconds."""

    writes: list[tuple[str, float]] = field(default_factory=list)

    @property
    def max_ms(self) -> float:
        return max((s for _, s in self.writes), default=0.0) * 1e3

    def p99_ms(self) -> float:
        ordered = sorted(s for _, s in self.writes)
        if not ordered:
            return 0.0
        return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e3

    def slowest(self) -> str:
        return max(self.writes, key=lambda w: w[1])[0] if self.writes else ""


class StallMeter:
    """The writer thread; `measure(fn)` runs fn beside it and returns the longest write (ms).

    `pause` is the sleep between two rounds of writes (a round is a claim, a move, a
    heartbeat and a finish), so that the writer loads the server like a few busy pilots, not
    like a flood."""

    def __init__(self, resource=None, pause: float = 0.005, pilot_reference: str = "stall-meter"):
        self.resource = resource
        self.pause = pause
        self.pilot_reference = pilot_reference
        self.current: int | None = None  # the job the writer holds (heartbeats it)
        self.error: BaseException | None = None
        self.rounds = 0
        self._window: Window | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stall-meter", daemon=True)

    # --- the writer ---------------------------------------------------------------------------

    def _timed(self, kind: str, call: Callable, *args, **kwargs):
        t0 = time.perf_counter()
        out = call(*args, **kwargs)
        seconds = time.perf_counter() - t0
        with self._lock:
            if self._window is not None:
                self._window.writes.append((kind, seconds))
        return out

    def _round(self, resource) -> None:
        from matcher import services
        from matcher.dispatcher import match_job

        match = self._timed("claim", match_job, resource, self.pilot_reference)
        if match is not None:
            self._timed("move", services.report_job, match.job.id, "running", "stall meter")
            if self.current is not None:
                self._timed("finish", services.report_job, self.current, "finished", "exit 0")
            self.current = match.job.id
        if self.current is not None:
            self._timed("heartbeat", services.record_heartbeat, self.current)

    def _run(self) -> None:
        from django.db import connections

        from matcher.matching import any_resource

        try:
            resource = self.resource or any_resource()
            self._started.set()
            while not self._stop.is_set():
                self._round(resource)
                self.rounds += 1
                time.sleep(self.pause)
        except BaseException as exc:  # told to the caller by measure()
            self.error = exc
            self._started.set()
        finally:
            connections.close_all()

    # --- the caller's side --------------------------------------------------------------------

    def start(self) -> StallMeter:
        self._thread.start()
        self._started.wait(30)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def __enter__(self) -> StallMeter:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def wait_for_job(self, timeout: float = 30.0) -> int:
        """The job the writer holds, once it has claimed one (it heartbeats that row)."""
        deadline = time.monotonic() + timeout
        while self.current is None and self.error is None and time.monotonic() < deadline:
            time.sleep(0.01)
        self._check()
        if self.current is None:
            raise RuntimeError("the stall meter's writer claimed no job: none is waiting")
        return self.current

    def _check(self) -> None:
        if self.error is not None:
            raise RuntimeError(f"the stall meter's writer failed: {self.error!r}") from self.error

    def window(self, fn: Callable[[], object]) -> tuple[Window, object]:
        """Run fn with the writer beside it: the writes made meanwhile, and fn's result. The
        write under way when fn returns is waited for (it may be the one fn held up)."""
        self._check()
        window = Window()
        with self._lock:
            self._window = window
        try:
            result = fn()
        finally:
            rounds = self.rounds
            deadline = time.monotonic() + 60
            while self.rounds == rounds and self.error is None and time.monotonic() < deadline:
                time.sleep(0.005)
            with self._lock:
                self._window = None
        self._check()
        return window, result

    def measure(self, fn: Callable[[], object]) -> float:
        """The longest single write (ms) while fn ran."""
        return self.window(fn)[0].max_ms

    def idle_ms(self, seconds: float = 1.0) -> float:
        """The longest write with nothing beside it, over `seconds`."""
        return self.measure(lambda: time.sleep(seconds))


def measure(fn: Callable[[], object], resource=None) -> float:
    """Run fn beside a fresh writer; the longest single write (ms) it waited meanwhile."""
    with StallMeter(resource) as meter:
        return meter.measure(fn)
