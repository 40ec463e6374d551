"""Sites and CEs as the pilots' hot path reads them: a per-process snapshot re-read every few
seconds, so that validating a resource description costs no query. A site or CE added by staff
is known to every process within `settings.TOPOLOGY_CACHE_SECONDS` (5 s)."""

from __future__ import annotations

import threading
import time

from django.conf import settings

from matcher.models import ComputingElement, Site

_lock = threading.Lock()
_snapshot: dict = {"at": None}


def _load() -> dict:
    return {
        "sites": set(Site.objects.values_list("name", flat=True)),
        "ce_site": dict(ComputingElement.objects.values_list("name", "site__name")),
        # The site mask (matcher/site_mask.py): a pilot there gets no job.
        "banned_sites": set(
            Site.objects.filter(status=Site.Status.BANNED).values_list("name", flat=True)
        ),
        "banned_ces": set(
            ComputingElement.objects.filter(status=ComputingElement.Status.BANNED).values_list(
                "name", flat=True
            )
        ),
    }


def snapshot() -> dict:
    now = time.monotonic()
    with _lock:
        if _snapshot["at"] is not None and now - _snapshot["at"] < settings.TOPOLOGY_CACHE_SECONDS:
            return _snapshot
    fresh = _load()
    with _lock:
        _snapshot.update(fresh, at=now)
        return _snapshot


def site_exists(name: str) -> bool:
    return name in snapshot()["sites"]


def site_of_ce(name: str) -> str | None:
    return snapshot()["ce_site"].get(name)


def masked(site: str | None, ce: str | None) -> bool:
    """Whether a pilot at this site or CE is in the site mask (banned)."""
    found = snapshot()
    return (site in found["banned_sites"]) or (ce in found["banned_ces"])


_groups: dict[int, tuple[float, list]] = {}


def groups_of(user) -> list[tuple[int, str, bool]]:
    """(id, name, GenericPilot) of the user's groups, re-read as often as the snapshot."""
    now = time.monotonic()
    with _lock:
        cached = _groups.get(user.pk)
        if cached is not None and now - cached[0] < settings.TOPOLOGY_CACHE_SECONDS:
            return cached[1]
    rows = list(user.grid_groups.values_list("pk", "name", "generic_pilot"))
    with _lock:
        if len(_groups) > 10_000:
            _groups.clear()
        _groups[user.pk] = (now, rows)
    return rows


def invalidate() -> None:
    """Forget the snapshot and the users' groups: the next look reads the database."""
    with _lock:
        _snapshot["at"] = None
        _groups.clear()
