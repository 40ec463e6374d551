"""The user page's job sections (web.shares.people): the user's jobs by state and
their recent failures, as the viewer may see them, each linking into the jobs list."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from django.urls import reverse

from core import clock
from matcher import job_counts
from matcher.models import Job, JobStatus

RECENT_FAILURES = 10
FAILURE_DAYS = 7


def _jobs_url(**params) -> str:
    return reverse("job-list") + "?" + urlencode(params)


def jobs_by_state(viewer, subject) -> dict:
    counts = job_counts.by_status(viewer, owner_id=subject.pk)  # the counts, not the jobs
    rows = [
        [(state.value, _jobs_url(owner=subject.username, status=state.value)), counts[state]]
        for state in JobStatus
        if counts.get(state)
    ]
    if rows:
        rows.append(["all", sum(counts.values())])
    return {
        "id": "user-jobs",
        "title": "Jobs by state",
        "head": ["state", "jobs"],
        "rows": rows,
        "link": ("the jobs list", _jobs_url(owner=subject.username)),
        "empty": "No jobs.",
    }


def recent_failures(viewer, subject) -> dict:
    since = clock.now() - timedelta(days=FAILURE_DAYS)
    # The subject's jobs are all the subject's own and staff's to see: no visibility clause
    # then, so that the failures of the window are read newest first from the (status,
    # status_changed) index, not every job the subject ever ran.
    own = viewer.is_staff or viewer.pk == subject.pk
    failed = (
        (Job.objects.all() if own else Job.objects.visible_to(viewer))
        .filter(owner=subject, status=JobStatus.FAILED, status_changed__gte=since)
        .order_by("-status_changed", "-id")
        .values("id", "name", "site", "status_reason", "status_changed")[:RECENT_FAILURES]
    )
    rows = [
        [
            (str(j["id"]), reverse("job-detail", args=[j["id"]])),
            j["name"] or "—",
            j["site"] or "—",
            j["status_reason"] or "—",
            j["status_changed"].strftime("%Y-%m-%d %H:%M"),
        ]
        for j in failed
    ]
    return {
        "id": "user-failures",
        "title": f"Recent failures (last {FAILURE_DAYS} days)",
        "head": ["job", "name", "site", "reason", "failed at"],
        "rows": rows,
        "link": ("all failed", _jobs_url(owner=subject.username, status=JobStatus.FAILED)),
        "empty": "No failure in that time.",
    }
