"""Sending the due notices: an e-mail through Django's mail backend, or a JSON POST to a
webhook (notifications.webhooks), several at once and fairly between hosts.

Each send is claimed first by a conditional UPDATE (the row's state and attempt count as
read): two runs at once never send the same attempt. A crash after sending but before the
row is marked leaves it `sending`; after SENDING_STALE it counts as a failed attempt and is
tried again, so such a crash may deliver that notice once more (at most once per crash, and
never more than NotificationMaxAttempts times in all).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict, deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import send_mail
from django.db import connection
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber
from django.urls import reverse
from django.utils import timezone

from brokerage.models import TaskStatus
from core import gdpconfig
from notifications import webhooks
from notifications.models import Channel, Kind, Notice

log = logging.getLogger(__name__)

# Longer than a webhook may take (WebhookTimeoutSeconds is at most a minute).
SENDING_STALE = timedelta(minutes=5)


def link(kind: str, object_id: int) -> str:
    """The absolute URL of the job's or task's page."""
    name = "job-detail" if kind == Kind.JOB else "task-detail"
    return settings.SITE_URL.rstrip("/") + reverse(name, args=[object_id])


def subject(n: Notice) -> str:
    label = f"{n.kind.capitalize()} {n.object_id}" + (f" ({n.name})" if n.name else "")
    return f"[gridwms] {label} {n.outcome}"


def state_label(n: Notice) -> str:
    """The final state as its page shows it (a task's says what `finished` means for it)."""
    if n.kind == Kind.TASK and n.final_state in TaskStatus.values:
        return TaskStatus(n.final_state).label
    return n.final_state


def body(n: Notice) -> str:
    label = f"{n.kind.capitalize()} {n.object_id}" + (f" ({n.name})" if n.name else "")
    lines = [f"{label} has {n.outcome} (state: {state_label(n)})."]
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


@dataclass(frozen=True)
class Limits:
    """A run's settings, read once by the run's own thread: the senders touch no database."""

    senders: int
    per_host: int
    host_seconds: float
    run_seconds: float
    timeout: float
    allowed: webhooks.Allowed

    @classmethod
    def current(cls) -> Limits:
        return cls(
            senders=gdpconfig.get("NotificationSenders"),
            per_host=gdpconfig.get("NotificationSendsPerHost"),
            host_seconds=gdpconfig.get("NotificationHostSeconds"),
            run_seconds=gdpconfig.get("NotificationRunSeconds"),
            timeout=gdpconfig.get("WebhookTimeoutSeconds"),
            allowed=webhooks.Allowed.current(),
        )


def send(n: Notice, limits: Limits) -> str | None:
    """Deliver the notice; the error shown to its user (None: sent). The error never says
    what answered or how: a closed port and an open one read the same."""
    if not n.target:
        return "no e-mail address" if n.channel == Channel.EMAIL else "no webhook URL"
    if n.channel == Channel.EMAIL:
        try:
            send_mail(subject(n), body(n), settings.DEFAULT_FROM_EMAIL, [n.target])
        except Exception:  # the mail server's own words are the operator's business
            log.warning("mail to %s failed", n.target, exc_info=True)
            return "could not send the e-mail"
        return None
    try:
        webhooks.post(n.target, payload(n), limits.timeout, limits.allowed)
    except webhooks.HTTPStatus as exc:
        return f"delivery failed (HTTP {exc.status})"
    except webhooks.Refused:
        return "address not allowed (a local or private address)"
    except Exception:  # DNS, a refused connection, a timeout, TLS, not HTTP at all
        return "could not connect"
    return None


def due(limit: int) -> list[Notice]:
    """Notices to try now: new ones, failed ones whose wait is over, stale `sending` ones,
    oldest first; at most a quarter of them of one user's channel, so that a backlog of one
    user's (a dead webhook's retries) never fills the run and leaves the others out."""
    now = timezone.now()
    ready = Notice.objects.filter(
        Q(state=Notice.State.PENDING)
        | Q(state=Notice.State.FAILED, next_attempt__lte=now)
        | Q(state=Notice.State.SENDING, updated__lt=now - SENDING_STALE)
    )
    turn = Window(RowNumber(), partition_by=[F("user_id"), F("channel")], order_by=F("id").asc())
    ready = ready.annotate(turn=turn).filter(turn__lte=max(limit // 4, 1))
    return list(ready.order_by("id")[:limit])


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


def host_of(n: Notice) -> str:
    """Whom the send waits on: the webhook's host, or the mail server for every e-mail."""
    if n.channel == Channel.EMAIL:
        return "mail"
    try:
        return (urlsplit(n.target).hostname or "").lower()
    except ValueError:
        return ""


def _send_in_thread(n: Notice, limits: Limits) -> str | None:
    try:
        return send(n, limits)
    finally:
        # Sends touch no model; should a mail backend ever do, its connection is not left open.
        connection.close()


def deliver(limit: int) -> dict[str, int]:
    """Try the due notices, each once, counts by resulting state. A bounded pool sends them,
    host by host in turns, at most NotificationSendsPerHost at once to a host and for at most
    NotificationHostSeconds a run: a slow or dead host delays only its own notices. No send
    starts after NotificationRunSeconds. Each notice is claimed just before its send, so
    those left for the next run are not taken."""
    limits = Limits.current()
    queues: dict[str, deque[Notice]] = defaultdict(deque)
    for n in due(limit):
        queues[host_of(n)].append(n)
    busy: dict[str, int] = defaultdict(int)
    spent: dict[str, float] = defaultdict(float)
    running: dict[Future, tuple[Notice, str, float]] = {}
    counts: dict[str, int] = {}
    started = time.monotonic()
    with ThreadPoolExecutor(limits.senders, thread_name_prefix="notice") as pool:
        while True:
            if time.monotonic() - started < limits.run_seconds:
                _start(pool, queues, busy, spent, running, limits)
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                n, host, began = running.pop(future)
                busy[host] -= 1
                spent[host] += time.monotonic() - began
                state = record(n, future.result())
                counts[state] = counts.get(state, 0) + 1
    return counts


def _start(pool, queues, busy, spent, running, limits: Limits) -> None:
    """Start sends while senders are free, taking the hosts in turns (oldest notice first
    within a host), skipping a host at its limit or past its time."""
    progress = True
    while progress and len(running) < limits.senders:
        progress = False
        for host, queue in queues.items():
            if len(running) >= limits.senders:
                return
            if not queue or busy[host] >= limits.per_host or spent[host] >= limits.host_seconds:
                continue
            n = queue.popleft()
            progress = True
            if not claim(n):
                continue  # another run has it
            busy[host] += 1
            running[pool.submit(_send_in_thread, n, limits)] = (n, host, time.monotonic())
