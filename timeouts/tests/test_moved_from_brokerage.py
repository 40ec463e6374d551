"""TimeoutAction moved from brokerage to timeouts (state only, the table keeps its name): a database
migrated before the move keeps every row, and the model's content type and permissions follow.

Each test migrates the test database back to before the move, writes through the historical
brokerage model, migrates forward to the latest and reads through timeouts.models; the database
is left at the latest migrations whatever happens.
"""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType

from matcher import services as job_services
from shares.models import User
from simulation import demo
from tests._migrations import historical_apps, migrate
from timeouts.models import TimeoutAction

BEFORE_THE_MOVE = [("brokerage", "0008_task_setup_default_setup"), ("timeouts", None)]
FIELDS = ("id", "cycle_run", "at", "rule", "job_id", "from_status", "to_status", "queue", "reason")


@pytest.fixture
def before_the_move(transactional_db):
    """The historical apps of a database at brokerage 0008 (TimeoutAction still in brokerage)."""
    yield from historical_apps(BEFORE_THE_MOVE)


def test_timeout_actions_written_before_the_move_are_read_after_it_with_every_value_kept(
    before_the_move,
):
    demo.create_world()
    alice = User.objects.get(username="alice")
    spec = {"owner_group": alice.grid_groups.first(), "setup": "Production", "cpu_time": 1000}
    jobs = job_services.submit_jobs(alice, [dict(spec) for _ in range(2)])
    old = before_the_move.get_model("brokerage", "TimeoutAction")
    at = datetime(2026, 11, 23, 12, 34, 56, 789012, tzinfo=UTC)
    rows = [
        {
            "cycle_run": 41,
            "at": at,
            "rule": "sent",
            "job_id": jobs[0].pk,
            "from_status": "sent",
            "to_status": "failed",
            "queue": "CERN-PROD",
            "reason": "timeout: sent 30 min (TIMEOUT_sent)",
        },
        {
            "cycle_run": None,
            "at": at.replace(hour=13),
            "rule": "fast_rebrokerage",
            "job_id": jobs[1].pk,
            "from_status": "activated",
            "to_status": "defined",
            "queue": "",
            "reason": "timeout: fast rebrokerage of 3 (Express: nQueue 12 > 3 × nRun 1, …)",
        },
        {
            # A job deleted since: the log row has no database constraint and stays.
            "cycle_run": 42,
            "at": at.replace(day=24),
            "rule": "heartbeat",
            "job_id": max(j.pk for j in jobs) + 1000,
            "from_status": "running",
            "to_status": "failed",
            "queue": "PIC",
            "reason": "",
        },
    ]
    written = [old.objects.create(**row) for row in rows]
    expected = sorted(tuple(getattr(r, f) for f in FIELDS) for r in written)

    migrate(None)

    assert TimeoutAction._meta.db_table == "timeouts_timeoutaction"  # renamed since (0003)
    read = sorted(TimeoutAction.objects.values_list(*FIELDS))
    assert read == expected
    assert [tuple(row[f] for f in FIELDS[1:]) for row in rows] == [
        tuple(getattr(TimeoutAction.objects.get(pk=w.pk), f) for f in FIELDS[1:]) for w in written
    ]
    assert TimeoutAction.objects.get(pk=written[0].pk).job == jobs[0]
    # The next row the cycle writes takes the next id, after the rows kept.
    new = TimeoutAction.objects.create(
        at=at, rule="sent", job_id=jobs[0].pk, from_status="sent", to_status="failed"
    )
    assert new.pk > max(w.pk for w in written)


def test_the_permissions_on_timeout_actions_follow_the_model_to_timeouts(before_the_move):
    content_type = ContentType.objects.get(app_label="brokerage", model="timeoutaction")
    permissions = set(
        Permission.objects.filter(content_type=content_type).values_list("pk", "codename")
    )
    assert {codename for _pk, codename in permissions} >= {
        "add_timeoutaction",
        "view_timeoutaction",
    }

    migrate(None)

    assert not ContentType.objects.filter(app_label="brokerage", model="timeoutaction").exists()
    moved = ContentType.objects.get_for_model(TimeoutAction)
    assert (moved.pk, moved.app_label) == (content_type.pk, "timeouts")
    assert (
        set(Permission.objects.filter(content_type=moved).values_list("pk", "codename"))
        == permissions
    )
