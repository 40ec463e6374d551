"""Sending one notice: an e-mail through Django's mail backend, or a JSON POST to a webhook.

Each send is claimed first by a conditional UPDATE (the row's state and attempt count as
read): two runs at once never send the same attempt. A crash after sending but before the
row is marked leaves it `sending`; after SENDING_STALE it counts as a failed attempt and is
tried again, so such a crash may deliver that notice once more (at most once per crash, and
never more than NotificationMaxAttempts times in all).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from config import gdpconfig
from notifications.models import Channel, Kind, Notice

# Longer than a webhook may take (WebhookTimeoutSeconds is at most a minute).
SENDING_STALE = timedelta(minutes=5)
# A run stops sending after this long (real seconds): the rest waits for the next run.
TIME_BUDGET = 45.0


def link(kind: str, object_id: int) -> str:
    """The absolute URL of the job's or task's page."""
    name = "job-detail" if kind == Kind.JOB else "task-detail"
    return settings.SITE_URL.rstrip("/") + reverse(name, args=[object_id])


def subject(n: Notice) -> str:
    label = f"{n.kind.capitalize()} {n.object_id}" + (f" ({n.name})" if n.name else "")
    return f"[gridwms] {label} {n.outcome}"


def body(n: Notice) -> str:
    label = f"{n.kind.capitalize()} {n.object_id}" + (f" ({n.name})" if n.name else "")
    lines = [f"{label} has {n.outcome} (state: {n.final_state})."]
    if n.reason:
        lines.append(f"Reason: {n.reason}")
    lines += ["", link(n.kind, n.object_id), ""]
    return "\n".join(lines)


def payload(n: Notice) -> dict:
    return {
        "kind": n.kind,
        "id": n.object_id,
        f"{n.kind}_id": n.object_id,
        "name": n.name,
        "outcome": n.outcome,
        "state": n.final_state,
        "reason": n.reason,
        "link": link(n.kind, n.object_id),
    }


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A webhook answers itself: a redirect counts as a failure (and is not followed)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def post_webhook(url: str, data: dict, timeout: float) -> None:
    """POST `data` as JSON; raise on anything but a 2xx answer."""
    request = urllib.request.Request(
        url,
        data=json.dumps(data).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "gridwms-notifications"},
        method="POST",
    )
    with _opener.open(request, timeout=timeout) as response:
        if not 200 <= response.status < 300:
            raise OSError(f"HTTP {response.status}")


def send(n: Notice) -> str | None:
    """Deliver the notice; the error (None: sent)."""
    if not n.target:
        return "no e-mail address" if n.channel == Channel.EMAIL else "no webhook URL"
    try:
        if n.channel == Channel.EMAIL:
            send_mail(subject(n), body(n), settings.DEFAULT_FROM_EMAIL, [n.target])
        else:
            post_webhook(n.target, payload(n), gdpconfig.get("WebhookTimeoutSeconds"))
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except Exception as exc:  # a mail server, DNS, a refused connection, a timeout
        return f"{type(exc).__name__}: {exc}"[:255]
    return None


def due(limit: int) -> list[Notice]:
    """Notices to try now: new ones, failed ones whose wait is over, stale `sending` ones."""
    now = timezone.now()
    return list(
        Notice.objects.filter(
            Q(state=Notice.State.PENDING)
            | Q(state=Notice.State.FAILED, next_attempt__lte=now)
            | Q(state=Notice.State.SENDING, updated__lt=now - SENDING_STALE)
        ).order_by("id")[:limit]
    )


def claim(n: Notice) -> bool:
    """Take the notice for this attempt: only one run wins (compare and set)."""
    won = Notice.objects.filter(pk=n.pk, state=n.state, attempts=n.attempts).update(
        state=Notice.State.SENDING, attempts=n.attempts + 1, updated=timezone.now()
    )
    n.attempts += 1
    return won == 1


def record(n: Notice, error: str | None) -> str:
    """Mark the attempt's result; the notice's new state."""
    now = timezone.now()
    fields: dict = {"updated": now, "error": (error or "")[:255]}
    if error is None:
        fields.update(state=Notice.State.SENT, sent_at=now, next_attempt=None)
    elif n.attempts >= gdpconfig.get("NotificationMaxAttempts") or not n.target:
        fields.update(state=Notice.State.GIVEN_UP, next_attempt=None)
    else:
        wait = gdpconfig.get("NotificationRetrySeconds") * 2 ** (n.attempts - 1)
        fields.update(state=Notice.State.FAILED, next_attempt=now + timedelta(seconds=wait))
    Notice.objects.filter(pk=n.pk, state=Notice.State.SENDING).update(**fields)
    return fields["state"]


def deliver(limit: int) -> dict[str, int]:
    """Try the due notices, each once, within TIME_BUDGET; counts by resulting state."""
    counts: dict[str, int] = {}
    started = time.monotonic()
    for n in due(limit):
        if time.monotonic() - started > TIME_BUDGET:
            break
        if not claim(n):
            continue  # another run has it
        state = record(n, send(n))
        counts[state] = counts.get(state, 0) + 1
    return counts
