"""The brokerage's alerts in the home page's health panel (web.matcher.health): tasks it cannot
place."""

from brokerage.models import Task, TaskStatus

MAX_TASKS = 5


def unbrokered_tasks(user) -> list[tuple[str, str]]:
    """Tasks (visible to the user) that brokerage found no nucleus or queue for: they are
    pending until it tries again."""
    pending = (
        Task.objects.visible_to(user).filter(status=TaskStatus.PENDING).order_by("-modified", "-id")
    )
    total = pending.count()
    rows = [
        (
            f"Task {t.pk} {t.name} cannot be brokered: {t.status_reason or 'no place found'}",
            f"/brokerage/tasks/{t.pk}/",
        )
        for t in pending.only("pk", "name", "status_reason")[:MAX_TASKS]
    ]
    if total > MAX_TASKS:
        rows.append(
            (f"… and {total - MAX_TASKS} more pending tasks", "/brokerage/tasks/?status=pending")
        )
    return rows
