"""What the notifications app adds to the matcher's job page (matcher.selectors' registry):
whether the user asked to be told when the job ends, and where to ask."""

from __future__ import annotations

from django.urls import reverse

from matcher.models import Job
from matcher.selectors import register_job_facts
from notifications.models import NotificationRequest


@register_job_facts
def job_notification(user, job: Job) -> dict:
    if not getattr(user, "is_authenticated", False):
        return {}
    asked = NotificationRequest.objects.filter(user=user, job_id=job.pk).first()
    return {
        "notification": {
            "request": asked,
            "url": reverse("notifications") + f"?job={job.pk}",
            "final": job.is_final,
        }
    }
