"""A text progress bar for long operator commands."""

import sys
import time


class ProgressBar:
    def __init__(self, label: str, stream=None, width: int = 30):
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.started = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        frac = done / total if total else 1.0
        filled = int(self.width * frac)
        elapsed = time.perf_counter() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (total - done) / rate if rate > 0 else 0.0
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {frac:6.1%} "
            f"{done:,}/{total:,}  {rate:,.0f}/s  ETA {eta:,.0f}s"
        )
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
