"""Pilots as their credentials know them, and the claims bound to them.

A pilot is (credential, reference): references are unique per credential, so another
credential's pilot with the same reference is another pilot, never a way into this one's jobs.
Registration (`POST /api/v1/pilots/`) and the match (`POST /api/v1/match/`, the DRF view and
the WSGI short path alike) resolve a reference to the caller's own pilot, creating it if the
caller has none (race-safe: the unique constraint decides, the loser reads the winner's row).
The claim writes that pilot into the job in the same statement (claims.py), and only that
pilot's credential reports on the job (api/pilots.py, pilots.report_job and heartbeat).

The match resolves on every request: each process remembers (user id, reference) -> pilot id,
a binding that never changes once made, in a bounded dict (filled only once the pilot's row is
committed, so a rolled-back creation is never remembered).
"""

from __future__ import annotations

import random
import threading
import uuid
from dataclasses import dataclass

from django.db import transaction

from core import clock
from matcher import dispatcher, matching, topology
from pilots.models import Pilot, PilotStatus

MAX_REMEMBERED = 100_000
_lock = threading.Lock()
_bound: dict[tuple[int, str], int] = {}


def _remember(key: tuple[int, str], pilot_id: int) -> None:
    with _lock:
        if len(_bound) >= MAX_REMEMBERED:
            _bound.clear()
        _bound[key] = pilot_id


def forget_all() -> None:
    """Drop what this process remembers (tests: each starts from a fresh database)."""
    with _lock:
        _bound.clear()


def _new_pilot_fields(user, site: str, ce: str, status: str) -> dict:
    """A pilot started by hand (registered, or met first at a match): no TaskQueue, no pool."""
    groups = topology.groups_of(user)
    group = groups[0] if groups else None
    now = clock.now()
    return {
        "task_queue_id": 0,
        "owner_dn": user.dn or user.get_username(),
        "owner_group": group[1] if group else "",
        "private": not (group and group[2]),
        "grid_type": "Manual",
        "submit_pool": "",
        "site": site,
        "ce": ce,
        "status": status,
        "submitted": now,
        "status_changed": now,
    }


def register_pilot(
    user, reference: str, site: str, ce: str = "", status: str = PilotStatus.SUBMITTED
) -> tuple[Pilot, bool]:
    """(the caller's pilot with this reference, whether it was created now). A pilot the
    director submitted for this credential finds its own record."""
    pilot, created = Pilot.objects.get_or_create(
        credential_user=user,
        reference=reference,
        defaults=_new_pilot_fields(user, site, ce, status),
    )
    key = (user.pk, reference)
    transaction.on_commit(lambda: _remember(key, pilot.pk))
    return pilot, created


def pilot_id_of(user, reference: str) -> int | None:
    """The id of the caller's own pilot with this reference; None if it has none (a reference
    with a NUL is none: PostgreSQL text cannot hold one, so no pilot has it)."""
    if "\x00" in reference:
        return None
    key = (user.pk, reference)
    found = _bound.get(key)
    if found is None:
        found = (
            Pilot.objects.filter(credential_user=user, reference=reference)
            .values_list("pk", flat=True)
            .first()
        )
        if found is not None:
            transaction.on_commit(lambda: _remember(key, found))
    return found


@dataclass
class Claimant:
    """The pilot a match claims for."""

    pilot_id: int
    reference: str
    made_up: bool = False  # created for a match that named no reference


def resolve_pilot(user, reference: str, resource: matching.Resource) -> Claimant:
    """The pilot making a claim: the caller's own pilot with this reference, created for the
    caller (at the resource's site and CE) if it has none; with no reference, a new pilot
    with a fresh one, told back in the answer, so that no job is ever sent to a pilot nobody
    may report for."""
    if not reference:
        reference = f"auto-{uuid.uuid4().hex}"
        fields = _new_pilot_fields(
            user, resource.site or "", resource.grid_ce or "", PilotStatus.RUNNING
        )
        pilot = Pilot.objects.create(credential_user=user, reference=reference, **fields)
        return Claimant(pilot.pk, reference, made_up=True)
    found = _bound.get((user.pk, reference))
    if found is None:
        pilot, _ = register_pilot(
            user, reference, resource.site or "", resource.grid_ce or "", PilotStatus.RUNNING
        )
        found = pilot.pk
    return Claimant(found, reference)


def claim(
    resource: matching.Resource, claimant: Claimant, rng: random.Random | None = None
) -> dispatcher.Match | None:
    """Match the resource to one job, bound to the claimant. A pilot made up for this match
    that got nothing is deleted again: reference-less asks leave no pilots behind."""
    found = dispatcher.match_job(resource, claimant.reference, rng, pilot_id=claimant.pilot_id)
    if found is None and claimant.made_up:
        Pilot.objects.filter(pk=claimant.pilot_id).delete()
    return found
