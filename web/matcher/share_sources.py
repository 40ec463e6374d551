"""What the matcher gives the shares' overview (web.shares.overview): the work waiting in its
TaskQueues, and its TaskQueues by priority for the Shares page. Registered in
MatcherConfig.ready(), so that the shares import nothing of the matcher."""

from __future__ import annotations

from django.http import HttpRequest

from matcher.models import TaskQueue
from matcher.taskqueue_priorities import taskqueue_loads, waiting_entities
from web.matcher import selectors
from web.shares.overview import Waiting, register_page_section, register_waiting_source

TOP_TASKQUEUES = 15  # the Shares page's "TaskQueue priorities" table


def waiting() -> Waiting:
    """Per group, the users with waiting jobs, the waiting jobs (per group and per user) and
    the TaskQueues that hold them, from one read of the TaskQueues' loads."""
    loads = taskqueue_loads()
    w = Waiting(users=dict(waiting_entities(loads)))
    for tq in loads:
        if tq.jobs > 0:
            for key in ((tq.group_id, None), (tq.group_id, tq.owner_id)):
                w.jobs[key] = w.jobs.get(key, 0) + tq.jobs
            w.taskqueues[tq.group_id] = w.taskqueues.get(tq.group_id, 0) + 1
    return w


def taskqueues(request: HttpRequest):
    """The TaskQueues the user may see, highest priority first, each with `unservable`: why no
    active CE can serve it (empty when some can)."""
    from matcher import servability

    rows = list(
        selectors.taskqueues_with_counts(TaskQueue.objects.visible_to(request.user)).order_by(
            "-priority", "id"
        )[:TOP_TASKQUEUES]
    )
    ces = [c.resource for c in servability.active_ces()] if rows else []
    for tq in rows:
        tq.unservable = servability.shortfalls(tq, ces)
    return rows


def register() -> None:
    from matcher import servability  # registers the TaskQueue page's flag too

    register_waiting_source("matcher", waiting)
    register_page_section("taskqueues", taskqueues)
    servability.register()  # how much of the waiting work some active CE can serve
