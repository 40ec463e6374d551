"""A slow or dead webhook delays only its own notices: a run sends several at once, a few at a
time to one host and for a bounded time per host, and ends within its own budget."""

import socket
import threading
import time

import pytest

from core import gdpconfig
from notifications import services
from notifications.models import Notice
from notifications.tests.conftest import Receiver


@pytest.fixture
def slow(db):
    """A webhook on another loopback address that answers after 3 s; sends give up after 1 s."""
    gdpconfig.set_value("WebhookAllowedNetworks", ["127.0.0.0/8"])
    gdpconfig.set_value("WebhookTimeoutSeconds", 1)
    receiver = Receiver("127.0.0.2", delay=3.0)
    yield receiver
    receiver.close()


@pytest.fixture
def fast(db):
    receiver = Receiver("127.0.0.1")
    yield receiver
    receiver.close()


def _ended(users, submit, end, name, url, count):
    services.save_preference(users[name], {"scope": "jobs", "webhook_url": url})
    return [end(submit(name)).pk for _ in range(count)]


def _gone_slow(receiver, run):
    """Its notices are tried once (it answers 503 at once) and due again; then it turns slow.
    So they are the oldest due notices of the next run."""
    gdpconfig.set_value("NotificationRetrySeconds", 0)
    receiver.delay, receiver.status = 0.0, 503
    run()
    receiver.bodies.clear()
    receiver.delay, receiver.status = 3.0, 204


def _timed(run):
    started = time.monotonic()
    run()
    return started, time.monotonic() - started


def test_a_fast_webhook_is_told_in_the_same_run_without_waiting_behind_a_slow_one(
    users, submit, end, run, slow, fast
):
    _ended(users, submit, end, "alice", slow.url, 8)
    _gone_slow(slow, run)
    [bobs] = _ended(users, submit, end, "bob", fast.url, 1)  # behind alice's eight

    started, took = _timed(run)

    [told] = fast.bodies
    assert told["json"]["id"] == bobs
    assert told["at"] - started < 0.8  # not after the slow ones (each takes a second)
    assert Notice.objects.get(object_id=bobs).state == Notice.State.SENT
    # NotificationSendsPerHost: two of the four senders at once, a third once one gave up
    came = sorted(b["at"] for b in slow.bodies)
    assert len(came) == 8 and came[1] - came[0] < 0.5
    assert all(later - first > 0.8 for first, later in zip(came, came[2:], strict=False))
    assert took < 6.5  # 8 slow sends, two at a time: about 4 s, not 8


def test_a_slow_host_stops_being_tried_when_its_time_in_the_run_is_spent(
    users, submit, end, run, slow, fast
):
    gdpconfig.set_value("NotificationHostSeconds", 2)
    _ended(users, submit, end, "alice", slow.url, 10)
    _gone_slow(slow, run)
    [bobs] = _ended(users, submit, end, "bob", fast.url, 1)

    _, took = _timed(run)

    tried = Notice.objects.filter(user=users["alice"], attempts=2)
    assert 2 <= tried.count() <= 4  # two at once, until its two seconds are spent
    assert set(tried.values_list("error", flat=True)) == {"could not connect"}
    left = Notice.objects.filter(user=users["alice"], state="failed", attempts=1)
    assert left.count() >= 6  # not claimed: the next run takes them
    assert Notice.objects.get(object_id=bobs).state == Notice.State.SENT
    assert took < 3.5


def test_a_run_starts_no_send_after_its_budget_and_ends_soon_after(users, submit, end, run, slow):
    gdpconfig.set_value("NotificationRunSeconds", 1)
    gdpconfig.set_value("NotificationSendsPerHost", 4)
    _ended(users, submit, end, "alice", slow.url, 12)
    _gone_slow(slow, run)

    _, took = _timed(run)

    assert took < 2 + 1.2  # the budget, then the sends under way end within their timeout
    assert Notice.objects.filter(attempts=2).count() <= 8  # four at once, at most two rounds
    assert Notice.objects.filter(state="failed", attempts=1).count() >= 4


def test_one_users_backlog_does_not_fill_a_run_and_leave_another_users_notice_out(
    users, submit, end, run, fast
):
    gdpconfig.set_value("WebhookAllowedNetworks", ["127.0.0.1"])
    alices = Receiver("127.0.0.1")
    try:
        _ended(users, submit, end, "alice", alices.url, 12)
        _gone_slow(alices, run)  # twelve retries due, older than anything else
        alices.delay = 0.0
        gdpconfig.set_value("NotificationBatch", 10)
        [bobs] = _ended(users, submit, end, "bob", fast.url, 1)

        run()

        assert [b["json"]["id"] for b in fast.bodies] == [bobs]
        assert len(alices.bodies) == 2  # a quarter of the run's ten; the rest next time
    finally:
        alices.close()


def test_a_webhook_that_answers_a_byte_at_a_time_is_cut_off_at_its_timeout(
    users, submit, end, run, slow
):
    trickler = socket.socket()
    trickler.bind(("127.0.0.1", 0))
    trickler.listen()

    def trickle():
        peer, _ = trickler.accept()
        peer.recv(65536)
        try:
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"x" * 40:
                peer.send(bytes([byte]))
                time.sleep(0.2)  # within the socket's timeout each time
        except OSError:
            pass  # cut off
        peer.close()

    threading.Thread(target=trickle, daemon=True).start()
    [job] = _ended(users, submit, end, "alice", f"http://127.0.0.1:{trickler.getsockname()[1]}/", 1)

    _, took = _timed(run)
    trickler.close()

    assert Notice.objects.get(object_id=job).error == "could not connect"
    assert took < 2.5  # WebhookTimeoutSeconds (1 s) in all, not per byte
