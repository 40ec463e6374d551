"""The tables of models moved between apps take their apps' names (pilots 0003: matcher_pilot and
its kin become pilots_*; timeouts 0003: brokerage_timeoutaction becomes timeouts_timeoutaction),
and the cycles' schedules call the base app's new package (config 0007: config.tasks.run becomes
core.tasks.run).

Each test migrates only the apps concerned back to the migration before, writes there through
the historical models, migrates forward and back and reads the rows in each direction; the test
database is left at the latest migrations whatever happens.
"""

import io
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.utils.module_loading import import_string

from shares.models import GridGroup
from tests._migrations import historical_apps, migrate

BEFORE_THE_RENAME = [
    ("pilots", "0002_content_types_follow_the_models"),
    ("timeouts", "0002_content_type_moved_from_brokerage"),
]
RENAMED = {
    "matcher_credential": "pilots_credential",
    "matcher_pilot": "pilots_pilot",
    "matcher_pilotstatushistory": "pilots_pilotstatushistory",
    "matcher_directordecision": "pilots_directordecision",
    "brokerage_timeoutaction": "timeouts_timeoutaction",
}
BEFORE_THE_SCHEDULES_MOVE = [("config", "0006_throttlewindow")]
AT = datetime(2026, 11, 23, 12, 34, 56, 789012, tzinfo=UTC)


def _existing(names) -> set[str]:
    return set(names) & set(connection.introspection.table_names())


def _columns(table: str) -> list[str]:
    with connection.cursor() as cur:
        return [c.name for c in connection.introspection.get_table_description(cur, table)]


def _rows(table: str, columns: list[str]) -> list[str]:
    """Each row's values in `columns` (the table's at the rename: columns added since, such as a
    pilot's worker node, are not the rename's to keep), as PostgreSQL writes a row."""
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cur:
        cur.execute(f'SELECT ROW({quoted})::text FROM "{table}" t ORDER BY t.id')
        return [row[0] for row in cur.fetchall()]


def _write_before_the_rename(apps) -> None:
    group = GridGroup.objects.create(name="lhcb_rename", job_share=1)
    credential = apps.get_model("pilots", "Credential").objects.create(
        dn="/CN=rename", group_id=group.pk, expires=AT
    )
    Pilot = apps.get_model("pilots", "Pilot")
    pilots = [
        Pilot.objects.create(
            reference=f"https://ce.example/rename/{n}",
            task_queue_id=7,
            owner_dn=credential.dn,
            owner_group=group.name,
            submit_pool="Simulated",
            status=status,
            submitted=AT,
            status_changed=AT,
        )
        for n, status in enumerate(("Submitted", "Running"))
    ]
    apps.get_model("pilots", "PilotStatusHistory").objects.create(
        pilot_id=pilots[1].pk, at=AT, from_status="Submitted", to_status="Running"
    )
    apps.get_model("pilots", "DirectorDecision").objects.create(
        cycle_run=41,
        at=AT,
        task_queue_id=7,
        priority=2.5,
        jobs=12,
        cpu_time=3600,
        lam=1.25,
        drawn=2,
        cap=5,
        waiting_pilots=1,
        submitted=2,
    )
    apps.get_model("timeouts", "TimeoutAction").objects.create(
        cycle_run=42,
        at=AT,
        rule="heartbeat",
        job_id=123456,
        from_status="running",
        to_status="failed",
    )


@pytest.fixture
def before_the_rename(transactional_db):
    # One app at a time: unapplying the last migrations of two apps in one go, Django's executor
    # can hand back a state that keeps the other app's last change (here, the new table names).
    steps = historical_apps(BEFORE_THE_RENAME[:1])
    next(steps)
    try:
        yield migrate(BEFORE_THE_RENAME).apps
    finally:
        steps.close()  # historical_apps' own way out: the latest migrations, checked


def test_rows_written_under_the_old_table_names_are_all_there_after_the_rename_and_back(
    before_the_rename,
):
    _write_before_the_rename(before_the_rename)
    assert _existing(RENAMED) == set(RENAMED)
    assert not _existing(RENAMED.values())
    columns = {old: _columns(old) for old in RENAMED}
    written = {old: _rows(old, columns[old]) for old in RENAMED}
    assert all(written.values()), written  # a row in every table, or the test proves nothing

    migrate(None)

    assert not _existing(RENAMED), "the old tables are renamed, not left beside the new ones"
    assert {new: _rows(new, columns[old]) for old, new in RENAMED.items()} == {
        RENAMED[old]: rows for old, rows in written.items()
    }
    from pilots.models import Pilot

    # The id sequence came along: the next pilot takes the next id, after the rows kept.
    kept = Pilot.objects.order_by("-id")[0]
    new = Pilot.objects.create(
        reference="https://ce.example/rename/next",
        task_queue_id=7,
        owner_dn=kept.owner_dn,
        owner_group=kept.owner_group,
        submit_pool="Simulated",
        status="Submitted",
        submitted=AT,
        status_changed=AT,
    )
    assert new.pk > kept.pk
    new.delete()

    migrate(BEFORE_THE_RENAME)  # the way back: the old names, every row

    assert not _existing(RENAMED.values())
    assert {old: _columns(old) for old in RENAMED} == columns
    assert {old: _rows(old, columns[old]) for old in RENAMED} == written


@pytest.fixture
def before_the_schedules_move(transactional_db):
    yield from historical_apps(BEFORE_THE_SCHEDULES_MOVE)


def test_the_cycles_schedules_call_core_tasks_after_the_migration_and_config_tasks_back(
    before_the_schedules_move,
):
    Schedule = before_the_schedules_move.get_model("django_q", "Schedule")
    Schedule.objects.create(name="cycle:retention", func="config.tasks.run", args="'retention'")
    Schedule.objects.create(name="someone else's", func="retention.tasks.other", args="")

    def funcs():
        return dict(Schedule.objects.values_list("name", "func"))

    migrate(None)
    assert funcs() == {
        "cycle:retention": "core.tasks.run",
        "someone else's": "retention.tasks.other",
    }
    assert callable(import_string(funcs()["cycle:retention"]))

    migrate(BEFORE_THE_SCHEDULES_MOVE)
    assert funcs() == {
        "cycle:retention": "config.tasks.run",
        "someone else's": "retention.tasks.other",
    }


@pytest.mark.django_db
def test_every_schedule_setup_schedules_writes_calls_a_function_that_imports():
    from django.core.management import call_command
    from django_q.models import Schedule

    call_command("setup_schedules", stdout=io.StringIO())

    funcs = set(Schedule.objects.filter(name__startswith="cycle:").values_list("func", flat=True))
    assert funcs == {"core.tasks.run"}
    assert callable(import_string("core.tasks.run"))
