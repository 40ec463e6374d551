"""The network weight of a satellite → nucleus link (docs/developer-guide.md, PanDA brokerage).

weight = NW_QUEUE_IMPORTANCE × queuedWeight + (1 − NW_QUEUE_IMPORTANCE) × throughputWeight, with
queuedWeight = 2 − queued files / NQUEUED_SAT_CAP, throughputWeight from the freshest measured
throughput (1 h, else 1 d, else 1 w) or, without any, from the closeness (0 best … 11 worst).
A queue at the nucleus itself gets 2.5 for both. PanDA's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

# (MB/s strictly exceeded, weight), best first.
THROUGHPUT_STEPS = (
    (200, 2.0),
    (100, 1.9),
    (75, 1.8),
    (50, 1.6),
    (20, 1.5),
    (10, 1.3),
    (2, 1.2),
    (1, 1.1),
)
SAME_SITE_WEIGHT = 2.5
MISSING_CLOSENESS = 11 * 0.7


@dataclass(frozen=True)
class LinkData:
    queued_files: int | None = None
    mbps_1h: float | None = None
    mbps_1d: float | None = None
    mbps_1w: float | None = None
    closeness: int | None = None


def throughput_weight(mbps: float) -> float:
    for threshold, weight in THROUGHPUT_STEPS:
        if mbps > threshold:
            return weight
    return 1.0


def closeness_weight(closeness: int | None) -> float:
    c = MISSING_CLOSENESS if closeness is None else closeness
    return 1 + (11 - c) / 11


def network_weight(
    link: LinkData | None, same_site: bool, sat_cap: int, importance: float
) -> tuple[float, dict[str, float | str]] | None:
    """(weight, factors), or None when there is no link data (the weight is then not applied)."""
    if same_site:
        return SAME_SITE_WEIGHT, {"queued_w": 2.5, "throughput_w": 2.5, "source": "same site"}
    if link is None:
        return None
    queued = link.queued_files or 0
    queued_w = 2 - queued / sat_cap
    for source, mbps in (("1h", link.mbps_1h), ("1d", link.mbps_1d), ("1w", link.mbps_1w)):
        if mbps is not None:
            tput_w = throughput_weight(mbps)
            source = f"throughput {source} ({mbps:g} MB/s)"
            break
    else:
        tput_w = closeness_weight(link.closeness)
        source = f"closeness {link.closeness if link.closeness is not None else 'unknown (7.7)'}"
    weight = importance * queued_w + (1 - importance) * tput_w
    return weight, {
        "queued_files": queued,
        "queued_w": round(queued_w, 4),
        "throughput_w": round(tput_w, 4),
        "source": source,
    }
