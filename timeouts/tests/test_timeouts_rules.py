"""The pure timeout rules: which rule watches a job, when it fires, and fast rebrokerage's
numbers worked out by hand from the seed."""

from datetime import UTC, datetime, timedelta

import pytest

from core import gdpconfig
from timeouts import rules
from timeouts.services import PARAMS

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)


def limits(**overrides):
    values = {name: gdpconfig.REGISTRY[name].default for name in PARAMS}
    return rules.Limits.from_params(values, overrides)


def job(status, age=timedelta(0), beat=None, priority=0, sub_status=""):
    changed = NOW - age
    return rules.JobView(status, changed, beat, priority, sub_status)


def test_a_limit_is_exceeded_only_strictly_after_it():
    lim = limits()
    assert rules.fired(job("sent", 30 * timedelta(minutes=1)), None, NOW, lim) is None
    d = rules.fired(job("sent", timedelta(minutes=30, seconds=1)), None, NOW, lim)
    assert d.rule.name == "sent" and d.reason == "timeout: sent 30 min (TIMEOUT_sent)"


def test_the_rule_whose_deadline_came_first_fires():
    lim = limits()
    # starting for 3 days with a live pilot: the 2-day rule; silent for 2.5 h: heartbeat first
    # (its deadline, 30 min ago, is later than the 2-day one's, a day ago).
    alive = job("starting", 3 * 24 * H, beat=NOW - 10 * 60 * timedelta(seconds=1))
    assert rules.fired(alive, None, NOW, lim).rule.name == "activated"
    silent = job("starting", 3 * H, beat=NOW - 2.5 * H)
    assert rules.fired(silent, None, NOW, lim).rule.name == "heartbeat"


def test_no_rule_watches_jobs_at_paused_or_disable_reassign_queues():
    lim = limits()
    old = job("running", 30 * 24 * H, beat=NOW - 24 * H)
    assert rules.fired(old, rules.QueueView("Q", status="paused"), NOW, lim) is None
    assert rules.fired(old, rules.QueueView("Q", catchall="x,disableReassign"), NOW, lim) is None
    assert rules.fired(old, rules.QueueView("Q", status="brokeroff"), NOW, lim) is not None


def test_a_never_started_queue_counts_as_inactive_for_the_4_hour_rule():
    lim = limits()
    q = rules.QueueView("Q", last_start=None)
    d = rules.fired(job("activated", 4 * H + timedelta(seconds=1), priority=800), q, NOW, lim)
    assert d.rule.name == "inactive_queue"
    busy = rules.QueueView("Q", last_start=NOW - H)
    assert rules.fired(job("activated", 5 * H, priority=800), busy, NOW, lim) is None


def test_the_heartbeat_limit_comes_from_the_queue_workflow_when_it_defines_one():
    lim = limits(pull_ups=0.5)
    assert lim.heartbeat(rules.QueueView("Q", workflow="pull_ups")) == (
        1800.0,
        "HEARTBEAT_TIMEOUT_pull_ups",
    )
    assert lim.heartbeat(rules.QueueView("Q", workflow="push")) == (7200.0, "HEARTBEAT_TIMEOUT")
    assert lim.heartbeat(None) == (7200.0, "HEARTBEAT_TIMEOUT")


@pytest.mark.parametrize(
    ("nq", "nr", "total", "limit", "slots", "excess"),
    [
        # min(40 − 3·5, 40 − 10, 40 − 0.3·50) = min(25, 30, 25) = 25
        (40, 5, 50, 10, None, 25),
        # nr = 0: the ratio is infinite; min(12, 12 − 8, 12 − 0.3·12) = 4
        (12, 0, 12, 8, None, 4),
        # min(20 − 3·6, 20 − 1, 20 − 0.3·60) = min(2, 19, 2) = 2
        (20, 6, 60, 1, None, 2),
        (20, 5, 55, 1, None, 4),  # min(5, 19, 3.5) → ceil 4
        (40, 14, 50, 10, None, 0),  # 40 > 42 fails
        (40, 5, 140, 10, None, 0),  # 40 > 42 fails (0.3 × 140)
        (40, 5, 50, 40, None, 0),  # 40 > 40 fails
        (40, 5, 50, None, None, 0),  # the gshare sets no threshold
        (40, 5, 50, 10, 0, 0),  # the queue defines slots
    ],
)
def test_fast_rebrokerage_excess(nq, nr, total, limit, slots, excess):
    assert rules.fast_rebrokerage(nq, nr, total, 3.0, 0.3, limit, slots).excess == excess
