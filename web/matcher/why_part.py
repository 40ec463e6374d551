"""One part of "why is my job not running?" (web.matcher.why): what the matcher and each area that
places or serves jobs (web.brokerage.why, web.classads.why, web.pilots.why) returns, in a module of
its own so that they need not import the explanation that calls them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Part:
    """One piece of the explanation: a title, lines (text, optional link), whether it is what
    holds the job back, and then the sentence that says so first (the headline)."""

    title: str
    lines: list[tuple[str, str]] = field(default_factory=list)
    blocking: bool = False
    headline: str = ""

    def add(self, text: str, url: str = "") -> Part:
        self.lines.append((text, url))
        return self
