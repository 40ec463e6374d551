"""Before a JobShare is saved, what it makes of every group's expected share (the Shares page's
preview); after, how long the WMSHistory corrector still remembers it (the page's note under a
group whose correction reflects a recent JobShare change).

A group's expected share is its JobShare over the sum of those of the groups with waiting jobs
(web.shares.overview); a group with nothing waiting has none until it has some. The corrector
compares the current shares with the usage averaged over each of its time slices, so for as long
as a slice reaches back before a JobShare change, the correction reflects the usage the old
JobShare gave.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from core import clock, gdpconfig
from shares import corrections
from shares.models import GridGroup, GroupChange
from web.shares import overview
from web.shares.forms import share_text

MEMORY_NOTES = 2  # a group's JobShare changes named under its row; "and N more" beyond
RECENT_LISTED = 5  # every group's, named above the table


def expected_shares(shares: dict[int, float], waiting: set[int]) -> dict[int, float | None]:
    """{group: its expected share (0..1), None when nothing of it waits}."""
    total = sum(s for g, s in shares.items() if g in waiting)
    return {g: (s / total if g in waiting and total > 0 else None) for g, s in shares.items()}


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f} %"


def preview(group: GridGroup, job_share: float) -> dict:
    """Every group's expected share now and with `job_share` as `group`'s JobShare, and a
    sentence saying what changes for the group edited."""
    groups = list(GridGroup.objects.order_by("name"))
    waiting = set(overview.waiting().users)
    now = {g.pk: g.job_share for g in groups}
    new = {**now, group.pk: float(job_share)}
    before, after = expected_shares(now, waiting), expected_shares(new, waiting)
    rows = [
        {
            "group": g.name,
            "edited": g.pk == group.pk,
            "waiting": g.pk in waiting,
            "job_share_now": share_text(now[g.pk]),
            "job_share": share_text(new[g.pk]),
            "expected_now": before[g.pk],
            "expected": after[g.pk],
            "expected_now_text": _pct(before[g.pk]),
            "expected_text": _pct(after[g.pk]),
        }
        for g in groups
    ]
    value = share_text(new[group.pk])
    if group.pk in waiting:
        summary = (
            f"With JobShare {value}, {group.name}'s expected share goes from "
            f"{_pct(before[group.pk])} to {_pct(after[group.pk])} of the grid."
        )
    else:
        then = expected_shares(new, waiting | {group.pk})[group.pk]
        summary = (
            f"{group.name} has no waiting jobs, so its JobShare counts only once it has some: "
            f"with JobShare {value}, it would then expect {_pct(then)} of the grid."
        )
    return {"group": group.name, "job_share": value, "summary": summary, "rows": rows}


def _group_instance():
    """The corrector instance correcting between groups (as configured now), or None."""
    if not gdpconfig.get("EnableSharesCorrection"):
        return None
    try:
        instances = corrections.parse_instances(gdpconfig.get("WMSHistory"))
    except ValueError:
        return None
    return next((i for i in instances if i.group is None), None)


def memory(rows: list[dict], now: datetime | None = None) -> dict | None:
    """Note under each group row whose correction still reflects a recent change of its
    JobShare (row["memory"]: {"changes": [note, ...], "more": n}, a note being {"change",
    "old", "new", "until", "slices"}). Returns what the corrector correcting between the groups
    remembers: {"instance", "span", "changes": [note, ...] of every group}, None when no
    corrector corrects between them."""
    now = now or clock.now()
    inst = _group_instance()
    if inst is None:
        return None
    span = max(s.time_span for s in inst.slices)
    recent = list(
        GroupChange.objects.filter(field="job_share", at__gt=now - timedelta(seconds=span))
        .select_related("group")
        .order_by("-at", "-pk")
    )

    def note(c: GroupChange) -> dict:
        return {
            "change": c,
            "old": _share_value(c.old),
            "new": _share_value(c.new),
            "until": c.at + timedelta(seconds=span),
            "slices": [
                f"{s.name} ({_span_text(s.time_span)})"
                for s in inst.slices
                if c.at > now - timedelta(seconds=s.time_span)
            ],
        }

    for row in rows:
        correction = row.get("correction")
        if correction is None or correction.instance != inst.name:
            continue
        own = [c for c in recent if c.group_id == row["group"].pk]
        if own:
            row["memory"] = {
                "changes": [note(c) for c in own[:MEMORY_NOTES]],
                "more": len(own) - MEMORY_NOTES if len(own) > MEMORY_NOTES else 0,
            }
    return {
        "instance": inst.name,
        "span": _span_text(span),
        "changes": [note(c) for c in recent[:RECENT_LISTED]],
        "more": max(0, len(recent) - RECENT_LISTED),
    }


def _share_value(value) -> str:
    return share_text(value) if isinstance(value, (int, float)) else str(value)


def _span_text(seconds: int) -> str:
    if seconds % 86400 == 0:
        return f"{seconds // 86400} d"
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"
