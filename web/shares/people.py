"""A user's page: their share standing (this app's) and the sections of the areas that hold their
work: their jobs by state and recent failures (web.matcher.people), their tasks and analysis caps
(web.brokerage.people).

A section is fn(viewer, subject) -> {"id", "title", "head": [...], "rows": [[cell, ...]],
"link": (text, url) or None, "empty": text} or None (nothing to show); a cell is a text or a
(text, url) pair. SECTIONS is their order on the page."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404

from shares.models import User
from web.brokerage import people as brokerage_people
from web.matcher import people as matcher_people
from web.shares import overview

SECTIONS = (
    matcher_people.jobs_by_state,
    brokerage_people.tasks,
    brokerage_people.analysis_caps,
    matcher_people.recent_failures,
)


def user_named_or_404(username: str) -> User:
    """The user of that name, else 404. A name holding a NUL is no user's (PostgreSQL text
    cannot hold one), not a lookup the database would refuse with an error."""
    if "\x00" in username:
        raise Http404("No such user.")
    return get_object_or_404(User, username=username)


def may_see(viewer, subject: User) -> bool:
    """Users see their own page; staff see everyone's."""
    return bool(getattr(viewer, "is_staff", False)) or viewer.pk == subject.pk


def _cell(cell) -> dict:
    text, url = cell if isinstance(cell, tuple) else (cell, "")
    return {"text": text, "url": url}


def sections(viewer, subject: User) -> list[dict]:
    """The sections with something to show, their cells as {"text", "url"}."""
    out = []
    for fn in SECTIONS:
        section = fn(viewer, subject)
        if section is not None:
            section["rows"] = [[_cell(c) for c in row] for row in section["rows"]]
            out.append(section)
    return out


def standing(subject: User) -> list[dict]:
    """Per group of the user: the group's row of the Shares page and, in a group without
    JobSharing, the user's own row in it (None while the user has no waiting jobs there)."""
    groups = set(subject.grid_groups.values_list("pk", flat=True))
    out = []
    for row in overview.overview()["rows"]:
        if row["group"].pk not in groups:
            continue
        mine = next((u for u in row["users"] if u["user"].pk == subject.pk), None)
        out.append({"group": row, "user": mine})
    return out
