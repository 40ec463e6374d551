"""The memory of a payload's process group, sampled from /proc while it runs. Standard library
only.

The payload's launcher (`launcher`) says what the payload and the descendants it waited for
used; the samples add what it did not wait for: the largest sum of the members' resident sizes
(VmRSS) and the largest single member's own high-water mark (VmHWM, counted from its `exec`).
Should the launcher be killed before it tells, `peak_kb` falls back on `wait4`'s `ru_maxrss`
of the group's leader, which starts at the pilot's own peak (the kernel carries the mark of the
image an `exec` replaces): only a figure above the pilot's peak taken just after the start can
be the payload's. Without /proc (not Linux) nothing is sampled.
"""

from __future__ import annotations

import os
import resource
import sys
import time

PROC = "/proc"
SAMPLE = 0.25  # seconds between looks at the whole process group


def own_peak_kb() -> int:
    """The pilot's own peak resident size so far, in kB."""
    return kilobytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def kilobytes(maxrss: int) -> int:
    """`ru_maxrss` in kB."""
    return maxrss // 1024 if sys.platform == "darwin" else maxrss  # bytes there


def _status_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in kB; zeros for a zombie or a process gone."""
    rss = hwm = 0
    try:
        with open(f"{PROC}/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith(b"VmHWM:"):
                    hwm = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return rss, hwm


def _group_of(pid: str) -> int | None:
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as f:
            stat = f.read()
        # The command name may hold spaces and parentheses: the fields follow its last ")".
        return int(stat[stat.rindex(b")") + 2 :].split()[2])
    except (OSError, ValueError, IndexError):
        return None


class TreeUsage:
    """The memory used by the process group `pgid` (the payload's: it leads it)."""

    def __init__(self, pgid: int, skip: int | None = None):
        self.pgid = pgid
        self.skip = skip  # a member not counted (the payload's launcher)
        self.floor_kb = own_peak_kb()  # what every child's ru_maxrss starts from
        self.sampled_kb = 0
        self._next = 0.0
        self._proc = os.path.isdir(PROC)

    def sample(self, now: float | None = None) -> None:
        """Look at the group if SAMPLE seconds passed since the last look."""
        now = time.monotonic() if now is None else now
        if not self._proc or now < self._next:
            return
        self._next = now + SAMPLE
        try:
            pids = [p for p in os.listdir(PROC) if p.isdigit()]
        except OSError:
            return
        total = peak_one = 0
        for pid in pids:
            if int(pid) == self.skip or (int(pid) != self.pgid and _group_of(pid) != self.pgid):
                continue
            rss, hwm = _status_kb(int(pid))
            total += rss
            peak_one = max(peak_one, hwm)
        self.sampled_kb = max(self.sampled_kb, total, peak_one)

    def peak_kb(self, waited_maxrss: int) -> int:
        """The payload's peak, given `ru_maxrss` of its main process from `wait4`."""
        waited = kilobytes(waited_maxrss)
        return max(self.sampled_kb, waited if waited > self.floor_kb else 0)
