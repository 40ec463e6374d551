"""Who wants to be told when work ends, and what was sent.

- NotificationPreference: a user's default, applied to each of their tasks (a task is one
  notice, not one per job) and, if its scope says so, to each of their jobs outside a task;
- NotificationRequest: one job or one task the user asked about;
- Notice: one message to one user about one ending of a job or task on one channel. Unique on
  (user, kind, object id, channel, episode): the cycle claims it by inserting it, so it is never
  sent twice, and a job rescheduled after it ended is told again when it ends again;
- ScanCursor: how far the cycle has read the job status history.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import URLValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from notifications.webhooks import check_saved

WEBHOOK_MAX_LENGTH = 500
webhook_validator = URLValidator(schemes=["http", "https"])
# The URL's form, then its address: never the grid's own machines or network.
WEBHOOK_VALIDATORS = [webhook_validator, check_saved]


class Outcomes(models.TextChoices):
    BOTH = "both", "finished or failed"
    FINISHED = "finished", "finished only"
    FAILED = "failed", "failed only"


class Scope(models.TextChoices):
    # Not every job by default: the jobs outside a task a user owns include bulk and simulated
    # submissions (the demo's arrive by the hundred); a task is one notice for all its jobs.
    TASKS = "tasks", "my tasks (one notice each); a job only when I ask about it"
    JOBS = "jobs", "my tasks and each of my jobs outside a task"


class Channel(models.TextChoices):
    EMAIL = "email", "e-mail"
    WEBHOOK = "webhook"


class Kind(models.TextChoices):
    JOB = "job"
    TASK = "task"


def wants(outcomes: str, outcome: str) -> bool:
    """Whether a preference or request for `outcomes` covers a job or task that `outcome`d."""
    return outcomes == Outcomes.BOTH or outcomes == outcome


class NotificationPreference(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    email = models.BooleanField("e-mail me", default=False)
    webhook_url = models.CharField(
        "webhook URL",
        max_length=WEBHOOK_MAX_LENGTH,
        blank=True,
        validators=WEBHOOK_VALIDATORS,
        help_text="http(s) URL that receives a JSON POST when work ends; empty: none",
    )
    outcomes = models.CharField(max_length=8, choices=Outcomes.choices, default=Outcomes.BOTH)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.TASKS)
    # Work that ended before the default was set is not announced.
    created = models.DateTimeField()
    modified = models.DateTimeField()

    def __str__(self) -> str:
        return f"notification preference of {self.user_id}"

    def save(self, *args, **kwargs):
        from core import clock

        # The history is read from where it ends when the first default is set.
        ensure_cursor(timezone.now(), clock.now())
        super().save(*args, **kwargs)

    @property
    def enabled(self) -> bool:
        return self.email or bool(self.webhook_url)

    def channels(self) -> list[str]:
        return [Channel.EMAIL] * self.email + [Channel.WEBHOOK] * bool(self.webhook_url)


class NotificationRequest(models.Model):
    """ "Tell me when this job (or this task) ends." No database constraint on the job or task:
    the job tables have one writer (matcher.services), and a purged job leaves the request
    behind, never found ended."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_requests"
    )
    job = models.ForeignKey(
        "matcher.Job",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    task = models.ForeignKey(
        "brokerage.Task",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    channels = models.JSONField(default=list)
    outcomes = models.CharField(max_length=8, choices=Outcomes.choices, default=Outcomes.BOTH)
    webhook_url = models.CharField(
        "webhook URL",
        max_length=WEBHOOK_MAX_LENGTH,
        blank=True,
        validators=WEBHOOK_VALIDATORS,
        help_text="empty: the one of your preference",
    )
    created = models.DateTimeField()
    # Set by the cycle once the work ended and its notices were queued.
    done = models.BooleanField(default=False)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(job__isnull=False, task__isnull=True)
                | Q(job__isnull=True, task__isnull=False),
                name="notificationrequest_job_xor_task",
            ),
            models.UniqueConstraint(
                fields=["user", "job"], condition=Q(job__isnull=False), name="notifyreq_user_job"
            ),
            models.UniqueConstraint(
                fields=["user", "task"],
                condition=Q(task__isnull=False),
                name="notifyreq_user_task",
            ),
        ]
        indexes = [
            models.Index(fields=["done", "id"], name="notifyreq_done_id"),
            # A job told of that ends again (rescheduled): its requests, found by the job.
            models.Index(fields=["job"], condition=Q(job__isnull=False), name="notifyreq_job"),
        ]

    def __str__(self) -> str:
        return f"notify {self.user_id} of {self.kind} {self.object_id}"

    @property
    def kind(self) -> str:
        return Kind.JOB if self.job_id else Kind.TASK

    @property
    def object_id(self) -> int:
        return self.job_id or self.task_id


class Notice(models.Model):
    class State(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"  # claimed by a run; left so by a crash, it is retried (services)
        SENT = "sent"
        FAILED = "failed", "failed (will retry)"
        GIVEN_UP = "given_up", "given up"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notices"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    object_id = models.BigIntegerField()
    channel = models.CharField(max_length=8, choices=Channel.choices)
    name = models.CharField(max_length=200, blank=True)
    # Which ending of the job: the id of the status history row into its final state (a
    # rescheduled job ends again under a new one); 0 for a task (it ends once).
    episode = models.BigIntegerField(default=0)
    outcome = models.CharField(max_length=8)  # finished | failed
    final_state = models.CharField(max_length=16)  # the job's or task's own state
    reason = models.CharField(max_length=255, blank=True)
    target = models.CharField(max_length=WEBHOOK_MAX_LENGTH, blank=True)  # address or URL
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=255, blank=True)
    created = models.DateTimeField()
    updated = models.DateTimeField()
    next_attempt = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "kind", "object_id", "channel", "episode"],
                name="notice_once_per_ending",
            )
        ]
        indexes = [models.Index(fields=["state", "next_attempt"], name="notice_state_next")]

    def __str__(self) -> str:
        return f"{self.channel} to {self.user_id}: {self.kind} {self.object_id} {self.outcome}"


class ScanCursor(models.Model):
    """How far the cycle has read the job status history (by id, the primary key's index).

    Ids are handed out when a row is inserted, not when its transaction commits: a move still
    open while a run reads past its id would be missed. So each run reads again from
    `previous`, where the cursor stood at least one lag ago (services.LAG), besides what is
    new; what was already queued is not queued twice (Notice is unique)."""

    name = models.CharField(max_length=32, primary_key=True)
    position = models.BigIntegerField(default=0)
    previous = models.BigIntegerField(default=0)
    rolled = models.DateTimeField()  # real time: when `previous` was last moved up
    # Tasks have no history table: those modified (on the grid's clock) since `task_since`
    # are read; `task_mark` is where it moves to at the next roll, as `previous` does.
    task_since = models.DateTimeField()
    task_mark = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.position}"


JOB_CURSOR = "job-history"


def ensure_cursor(real_now, clock_now) -> ScanCursor:
    """The cursor, created where the history ends now: work that ended before anyone set a
    default is not announced by default (requests are found on their own)."""
    from matcher.models import JobStatusHistory

    top = JobStatusHistory.objects.order_by("-id").values_list("id", flat=True).first() or 0
    cursor, _ = ScanCursor.objects.get_or_create(
        name=JOB_CURSOR,
        defaults={
            "position": top,
            "previous": top,
            "rolled": real_now,
            "task_since": clock_now,
            "task_mark": clock_now,
        },
    )
    return cursor
