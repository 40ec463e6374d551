"""What the notifications app adds to the matcher's job page (web.matcher.selectors.JOB_FACTS):
whether the user asked to be told when the job ends, and where to ask."""

from __future__ import annotations

from django.urls import reverse

from matcher.models import Job
from notifications.models import Channel, NotificationPreference, NotificationRequest


def _channels(user) -> list[str]:
    """The one-click request's channels: the user's default ones (a webhook if their default has
    one, e-mail if they have an address); none: the page links to the full form instead."""
    pref = NotificationPreference.objects.filter(user=user).first()
    channels = [Channel.WEBHOOK] if pref is not None and pref.webhook_url else []
    if user.email and (pref is None or pref.email or not channels):
        channels.insert(0, Channel.EMAIL)
    return [str(c) for c in channels]


def job_notification(user, job: Job) -> dict:
    if not getattr(user, "is_authenticated", False):
        return {}
    asked = NotificationRequest.objects.filter(user=user, job_id=job.pk).first()
    return {
        "notification": {
            "request": asked,
            "url": reverse("notifications") + f"?job={job.pk}",
            "final": job.is_final,
            "channels": _channels(user),
        }
    }
