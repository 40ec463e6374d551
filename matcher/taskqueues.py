"""TaskQueue definitions: pure functions, no database.

A job joins the TaskQueue of its exact requirement set: the single-valued owner, group, setup and
CPU segment, and the multi-valued lists as canonical sorted sets.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MULTI_VALUED_FIELDS = (
    "sites",
    "banned_sites",
    "grid_ces",
    "platforms",
    "submit_pools",
    "pilot_types",
    "grid_middlewares",
    "tags",
)


def cpu_segment(cpu_time: int, segments: Sequence[int]) -> int:
    """The first segment at least `cpu_time`; above the last segment, the last one."""
    i = bisect.bisect_left(segments, cpu_time)
    return segments[i] if i < len(segments) else segments[-1]


def canonical_values(values: Iterable[str]) -> list[str]:
    """A multi-valued requirement as a set: stripped, without empties or repeats, sorted."""
    return sorted({v.strip() for v in values if v and v.strip()})


def definition(
    owner_id: int,
    owner_group_id: int,
    setup: str,
    cpu_time: int,
    requirements: Mapping[str, Iterable[str]],
    segments: Sequence[int],
) -> dict[str, Any]:
    d: dict[str, Any] = {
        "owner_id": owner_id,
        "owner_group_id": owner_group_id,
        "setup": setup,
        "cpu_time": cpu_segment(cpu_time, segments),
    }
    for field in MULTI_VALUED_FIELDS:
        d[field] = canonical_values(requirements.get(field, ()))
    return d


def definition_key(defn: Mapping[str, Any]) -> str:
    """A digest of a canonical definition: equal definitions, and only they, share a key."""
    text = json.dumps(
        [defn["owner_id"], defn["owner_group_id"], defn["setup"], defn["cpu_time"]]
        + [defn[f] for f in MULTI_VALUED_FIELDS],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode()).hexdigest()
