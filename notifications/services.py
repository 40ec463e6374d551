"""The notifications cycle (every minute), and what the API and the page call to change a
user's preference and requests.

A run: find what is due (notifications.discovery: the requests whose work ended, the jobs and
tasks of users with a default that ended since the cursor, the jobs asked about that ended
again), insert one Notice per user, ending of a job or task, and channel with INSERT ... ON
CONFLICT DO NOTHING (the unique constraint makes a second run, or a concurrent one, insert
nothing: the claim), mark those requests done, move the cursor, then send what is due
(notifications.delivery).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from core import clock, gdpconfig
from core.cycles import cycle
from notifications import delivery, discovery
from notifications.models import (
    Notice,
    NotificationPreference,
    NotificationRequest,
)


def queue_due(batch: int) -> dict[str, int]:
    """Insert the notices now due; how many requests and candidates were found."""
    now = timezone.now()
    cursor = discovery.cursor()
    top = discovery.top_of_history()
    notices, request_ids = discovery.from_requests(batch, now)
    prefs = discovery.enabled_preferences()
    # Read even without a default: a request already answered is told of its job's next ending.
    from_jobs, reached = discovery.from_history(prefs, cursor, top, batch, now)
    notices += from_jobs
    if prefs:
        notices += discovery.from_tasks(prefs, cursor, batch, now)
    with transaction.atomic():
        # The claim: a notice already there (another run's, an earlier one's) is left alone.
        Notice.objects.bulk_create(notices, ignore_conflicts=True, batch_size=500)
        NotificationRequest.objects.filter(pk__in=request_ids).update(done=True)
    discovery.advance(reached)
    return {"requests_ended": len(request_ids), "candidates": len(notices)}


@cycle("notifications")
def notifications_cycle() -> dict:
    """Queue the notices due since the last run and send those due now."""
    batch = gdpconfig.get("NotificationBatch")
    counts = queue_due(batch)
    counts.update(delivery.deliver(batch))
    return counts


# --- what users change -------------------------------------------------------------------------


def preference_of(user) -> NotificationPreference:
    """The user's default (unsaved and off when they never set one)."""
    found = NotificationPreference.objects.filter(user=user).first()
    if found is not None:
        return found
    now = clock.now()
    return NotificationPreference(user=user, created=now, modified=now)


def save_preference(user, fields: dict) -> NotificationPreference:
    """Set the user's default. Turning it on (again) counts from now: work that ended while it
    was off is not announced."""
    pref = preference_of(user)
    was_on = pref.pk is not None and pref.enabled
    for name, value in fields.items():
        setattr(pref, name, value)
    now = clock.now()
    if not was_on and pref.enabled:
        pref.created = now
    pref.modified = now
    pref.save()
    return pref


def create_request(user, fields: dict) -> NotificationRequest:
    """A new request; ValidationError naming the job or task when the user already asked
    about it (two requests at once: the unique constraint decides)."""
    try:
        with transaction.atomic():
            return NotificationRequest.objects.create(user=user, created=clock.now(), **fields)
    except IntegrityError:
        field = "job" if fields.get("job_id") else "task"
        raise ValidationError({field: ["you already asked about it"]}) from None


def notices_of(user):
    return Notice.objects.filter(user=user).order_by("-id")


def pending_requests_of(user):
    return NotificationRequest.objects.filter(user=user, done=False).order_by("-id")
