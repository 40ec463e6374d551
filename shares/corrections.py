"""The WMSHistory share corrector: pure, no database (docs/developer-guide.md, Job priorities
and share corrections).

For each time slice, u_e is the entity's fraction of the running jobs (averaged over the slice)
among the entities this instance corrects and s_e its fraction of their expected shares; the
slice correction is clamp(s_e / u_e, 1/MaxCorrection, MaxCorrection), MaxCorrection when the
entity did not run. A slice in which none of them ran is neutral (1). The final correction is
the weighted sum of the slice corrections (weights normalised), clamped to
[1/MaxGlobalCorrectionFactor, MaxGlobalCorrectionFactor].
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Slice:
    name: str
    time_span: int  # seconds
    weight: float
    max_correction: float


@dataclass(frozen=True)
class Instance:
    name: str
    slices: tuple[Slice, ...]
    max_global_correction: float
    group: str | None = None  # None: corrects between groups; g: between the users of g


def clamp(value: float, bound: float) -> float:
    return max(min(value, bound), 1.0 / bound)


def slice_corrections(
    shares: Mapping[Hashable, float], usage: Mapping[Hashable, float], max_correction: float
) -> dict[Hashable, float]:
    """One slice: {entity: correction} for the entities of `shares` (their expected shares)
    given their average running jobs over the slice."""
    total_usage = sum(max(0.0, usage.get(e, 0.0)) for e in shares)
    total_share = sum(shares.values())
    if total_usage <= 0 or total_share <= 0:
        return dict.fromkeys(shares, 1.0)  # nobody ran: neutral
    out = {}
    for e, share in shares.items():
        used = max(0.0, usage.get(e, 0.0)) / total_usage
        expected = share / total_share
        out[e] = max_correction if used == 0 else clamp(expected / used, max_correction)
    return out


def corrections(
    instance: Instance,
    shares: Mapping[Hashable, float],
    usage_by_slice: Sequence[Mapping[Hashable, float]],
) -> tuple[dict[Hashable, float], list[dict[Hashable, float]]]:
    """(final correction per entity, the per-slice corrections), `usage_by_slice` in the order
    of `instance.slices`."""
    total_weight = sum(s.weight for s in instance.slices)
    per_slice = [
        slice_corrections(shares, usage, s.max_correction)
        for s, usage in zip(instance.slices, usage_by_slice, strict=True)
    ]
    final = {}
    for e in shares:
        if total_weight <= 0:
            final[e] = 1.0
            continue
        value = sum(
            s.weight / total_weight * corr[e]
            for s, corr in zip(instance.slices, per_slice, strict=True)
        )
        final[e] = clamp(value, instance.max_global_correction)
    return final, per_slice


# The seed's example configuration.
SEED_EXAMPLE = {
    "GroupsInstance": {
        "MaxGlobalCorrectionFactor": 3,
        "WeekSlice": {"TimeSpan": 604800, "Weight": 80, "MaxCorrection": 2},
        "HourSlice": {"TimeSpan": 3600, "Weight": 20, "MaxCorrection": 5},
    },
    "lhcb_userInstance": {
        "Group": "lhcb_user",
        "MaxGlobalCorrectionFactor": 3,
        "WeekSlice": {"TimeSpan": 604800, "Weight": 80, "MaxCorrection": 2},
        "HourSlice": {"TimeSpan": 3600, "Weight": 20, "MaxCorrection": 5},
    },
}

INSTANCE_KEYS = {"Group", "MaxGlobalCorrectionFactor"}
SLICE_KEYS = {"TimeSpan", "Weight", "MaxCorrection"}


MAX_TIME_SPAN = 366 * 86400  # a year: longer than any usage history kept


def _number(path: str, value: object, minimum: float, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{path} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{path} must be a finite number, got {value}")
    if value < minimum or (strict and value == minimum):
        raise ValueError(f"{path} must be {'>' if strict else '≥'} {minimum:g}, got {value}")
    return float(value)


def _time_span(path: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{path} must be a whole number of seconds, got {value!r}")
    if not 1 <= value <= MAX_TIME_SPAN:
        raise ValueError(f"{path} must be between 1 and {MAX_TIME_SPAN} s, got {value}")
    return value


def parse_instances(config: Any) -> list[Instance]:
    """The WMSHistory section (the seed's layout, as JSON) as Instances; ValueError naming the
    offending path otherwise."""
    if not isinstance(config, dict):
        raise ValueError("WMSHistory must be an object of instances")
    instances = []
    groups_seen: dict[str | None, str] = {}
    for name, body in config.items():
        if not isinstance(body, dict):
            raise ValueError(f"{name} must be an object")
        group = body.get("Group")
        if group is not None and (not isinstance(group, str) or not group.strip()):
            raise ValueError(f"{name}.Group must be a group name")
        if group in groups_seen:
            what = f"group {group}" if group else "the groups"
            raise ValueError(f"{name} corrects {what} again (as {groups_seen[group]})")
        groups_seen[group] = name
        max_global = _number(
            f"{name}.MaxGlobalCorrectionFactor", body.get("MaxGlobalCorrectionFactor"), 1.0
        )
        slices = []
        for key, sl in body.items():
            if key in INSTANCE_KEYS:
                continue
            if not isinstance(sl, dict):
                raise ValueError(f"{name}.{key} is not a known option nor a slice")
            unknown = set(sl) - SLICE_KEYS
            if unknown:
                raise ValueError(f"{name}.{key} has unknown options: {', '.join(sorted(unknown))}")
            slices.append(
                Slice(
                    name=key,
                    time_span=_time_span(f"{name}.{key}.TimeSpan", sl.get("TimeSpan")),
                    weight=_number(f"{name}.{key}.Weight", sl.get("Weight"), 0),
                    max_correction=_number(
                        f"{name}.{key}.MaxCorrection", sl.get("MaxCorrection"), 1.0
                    ),
                )
            )
        if not slices:
            raise ValueError(f"{name} needs at least one time slice")
        if sum(s.weight for s in slices) <= 0:
            raise ValueError(f"{name}: the slices' weights must not all be 0")
        instances.append(Instance(name, tuple(slices), max_global, group))
    return instances
