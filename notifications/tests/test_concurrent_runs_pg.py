"""Runs of the notifications cycle at once (the cycle's own lock bypassed: each thread calls
its body, with its own database connection) still send each notice once. Skipped without
PostgreSQL."""

import threading

import pytest
from django.core import mail
from django.db import connections

from notifications import services
from notifications.models import Notice

pytestmark = pytest.mark.django_db(transaction=True)
THREADS = 6


def test_concurrent_runs_send_each_notice_once(with_email, submit, end, webhook):
    alice = with_email["alice"]
    services.save_preference(alice, {"scope": "jobs", "email": True, "webhook_url": webhook.url})
    jobs = [end(submit("alice")) for _ in range(3)]
    asked = submit("bob")
    services.create_request(with_email["bob"], {"job_id": asked.pk, "channels": ["email"]})
    end(asked)

    barrier = threading.Barrier(THREADS)
    errors = []

    def one_run():
        try:
            barrier.wait()
            services.notifications_cycle()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=one_run) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    assert not errors, errors
    assert sorted(m.to[0] for m in mail.outbox) == ["alice@example.org"] * 3 + ["bob@example.org"]
    assert sorted(b["json"]["id"] for b in webhook.bodies) == sorted(j.pk for j in jobs)
    assert set(Notice.objects.values_list("state", flat=True)) == {"sent"}
    assert Notice.objects.count() == 7
