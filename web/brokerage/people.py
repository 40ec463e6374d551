"""The user page's brokerage sections (web.shares.people): the user's tasks and their
analysis caps against usage, linking to the task pages and the analysis page."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse

from brokerage.models import PandaQueue, Task
from brokerage.services import analysis as analysis_services

RECENT_TASKS = 20


def tasks(viewer, subject) -> dict:
    rows = [
        [
            (str(t.pk), reverse("task-detail", args=[t.pk])),
            t.name,
            t.get_kind_display(),
            t.status,
            t.created.strftime("%Y-%m-%d %H:%M"),
        ]
        for t in Task.objects.visible_to(viewer)
        .filter(owner=subject)
        .order_by("-created", "-id")[:RECENT_TASKS]
    ]
    listed = reverse("task-list") + "?" + urlencode({"owner": subject.username})
    return {
        "id": "user-tasks",
        "title": f"Tasks (the latest {RECENT_TASKS})",
        "head": ["task", "name", "kind", "status", "created"],
        "rows": rows,
        "link": ("the tasks list", listed),
        "empty": "No tasks.",
    }


def analysis_caps(viewer, subject) -> dict:
    params = analysis_services.analysis_params()
    # The caps need only which queues are at hi-class sites, not the queues' job counts.
    queues = list(PandaQueue.objects.select_related("site"))
    _usage, caps = analysis_services.user_caps(subject, queues, params)
    url = reverse("analysis-user") + (
        "?" + urlencode({"user": subject.username}) if viewer.is_staff else ""
    )
    return {
        "id": "user-caps",
        "title": "Analysis caps (PanDA)",
        "head": ["what", "used", "cap", "left"],
        "rows": [[what, used, cap, max(0, cap - used)] for what, used, cap in caps],
        "link": ("the analysis page", url),
        "empty": "",
    }
