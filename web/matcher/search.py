"""The header's quick search: one box taking a job id, a task id, a pilot reference or a user
name. One match goes straight to it; several, or none, show a small page saying so, with the
lists' own searches for what was typed. Only what the user may see is found (their own and
their JobSharing groups' jobs, tasks and pilots; their own user page, or anyone's for staff).

Each finder is fn(user, text) -> [(kind, label, url)], in FINDERS' order on the page."""

from __future__ import annotations

from urllib.parse import urlencode

from django.shortcuts import redirect, render
from django.urls import reverse

from brokerage.models import Task
from matcher.models import Job
from pilots.models import Pilot
from shares.models import User
from web.core.listing import MAX_ID
from web.shares.people import may_see

MAX_LENGTH = 255  # a pilot reference's column
MAX_PILOTS = 20  # one reference under many credentials: listed, at most these


def _number(text: str) -> int | None:
    if text.isascii() and text.isdigit() and 0 < int(text) <= MAX_ID:
        return int(text)
    return None


def jobs(user, text: str) -> list[tuple[str, str, str]]:
    pk = _number(text)
    if pk is None or not Job.objects.visible_to(user).filter(pk=pk).exists():
        return []
    return [("job", f"Job {pk}", reverse("job-detail", args=[pk]))]


def tasks(user, text: str) -> list[tuple[str, str, str]]:
    pk = _number(text)
    task = Task.objects.visible_to(user).filter(pk=pk).only("name").first() if pk else None
    if task is None:
        return []
    return [("task", f"Task {pk} ({task.name})", reverse("task-detail", args=[pk]))]


def pilots(user, text: str) -> list[tuple[str, str, str]]:
    rows = Pilot.objects.visible_to(user).filter(reference=text).order_by("-id")[:MAX_PILOTS]
    return [
        ("pilot", f"Pilot {p.reference} ({p.site or 'no site'}, {p.status})",
         reverse("pilot-detail", args=[p.pk]))
        for p in rows
    ]  # fmt: skip


def users(user, text: str) -> list[tuple[str, str, str]]:
    subject = User.objects.filter(username__iexact=text).first()
    if subject is None or not may_see(user, subject):
        return []
    return [("user", f"User {subject.username}", reverse("user-detail", args=[subject.username]))]


FINDERS = (jobs, tasks, pilots, users)


def quick_search(request):
    text = request.GET.get("q", "").strip()
    hits: list[tuple[str, str, str]] = []
    # A NUL names nothing (PostgreSQL text cannot hold one): refused, as too long is.
    problem = (
        f"at most {MAX_LENGTH} characters"
        if len(text) > MAX_LENGTH
        else "no NUL character"
        if "\x00" in text
        else ""
    )
    text = text.replace("\x00", "")
    too_long = bool(problem)
    if text and not too_long:
        for find in FINDERS:
            hits += find(request.user, text)
    if len(hits) == 1:
        return redirect(hits[0][2])
    query = urlencode({"q": text}) if text and not too_long else ""
    context = {
        "text": text,
        "hits": hits,
        "too_long": too_long,
        "problem": problem,
        "elsewhere": [
            ("jobs whose id, task or name has it", f"{reverse('job-list')}?{query}"),
            ("tasks whose id or name has it", f"{reverse('task-list')}?{query}"),
            ("pilots whose id or reference has it", f"{reverse('pilot-list')}?{query}"),
        ]
        if query
        else [],
    }
    return render(request, "matcher/search.html", context, status=400 if too_long else 200)
