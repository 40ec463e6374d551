"""An existing deployment upgrades without losing data: a database at the previous release's
migrations, holding a demo world with waiting and killed jobs, their TaskQueues and history,
and users' notification preferences, migrates forward in one pass, and every row of every table
is still there with the same contents.

The previous release's migrations are named here once per release (the last migration of each
app then); the test migrates the test database back to them, writes through the historical
models where a model changed, migrates forward and compares. The database is left at the latest
migrations whatever happens.
"""

import hashlib
from datetime import UTC, datetime

import pytest
from django.apps import apps as current_apps
from django.db import connection

from tests._migrations import historical_apps, migrate

AT = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)
# The last migration of each app in the previous release (before throttling's table and the
# webhooks' address checks).
PREVIOUS_RELEASE = [
    ("config", "0005_cyclerun_host"),
    ("shares", "0003_gridgroup_production_management"),
    ("matcher", "0012_owner_sort_indexes"),
    ("pilots", "0002_content_types_follow_the_models"),
    ("brokerage", "0010_task_architecture_spec_parsed_once"),
    ("timeouts", "0002_content_type_moved_from_brokerage"),
    ("classads", "0001_initial"),
    ("sandboxes", "0001_initial"),
    ("notifications", "0001_initial"),
    ("accounting", "0001_initial"),
]


def _tables() -> list[str]:
    """Every table of the project's apps that exists in the database now."""
    existing = set(connection.introspection.table_names())
    names = {m._meta.db_table for m in current_apps.get_models() if m._meta.managed}
    return sorted(names & existing)


def _columns(tables: list[str]) -> dict[str, list[str]]:
    """Per table: its columns now (a later migration may add columns; those it had must keep
    their values)."""
    with connection.cursor() as cur:
        return {
            table: sorted(
                c.name for c in connection.introspection.get_table_description(cur, table)
            )
            for table in tables
        }


def _fingerprint(columns: dict[str, list[str]]) -> dict[str, tuple[int, str]]:
    """Per table: its row count and a digest of every row's values in the given columns."""
    out = {}
    with connection.cursor() as cur:
        for table, names in columns.items():
            fields = ", ".join(f'"{n}"' for n in names)
            cur.execute(f'SELECT ROW({fields})::text FROM "{table}" ORDER BY 1')
            rows = [r[0] for r in cur.fetchall()]
            out[table] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
    return out


@pytest.fixture
def previous_release(transactional_db):
    yield from historical_apps(PREVIOUS_RELEASE)


def test_a_database_of_the_previous_release_upgrades_in_one_pass_keeping_every_row(
    previous_release,
):
    from matcher import bulk, services
    from shares.models import User as CurrentUser
    from simulation import demo

    old = previous_release
    # A world written by today's services (their tables unchanged since the previous release):
    # waiting jobs in their TaskQueues, one killed, the history and counts beside them.
    migrate(None)
    demo.create_world()
    bulk.load_jobs(300, seed=3, batch_size=100)
    bob = CurrentUser.objects.get(username="bob")
    [job] = services.submit_jobs(
        bob, [{"owner_group": bob.grid_groups.first(), "cpu_time": 100, "setup": "LHCb-Production"}]
    )
    services.kill_job(job.pk, bob)
    migrate(PREVIOUS_RELEASE)
    User = old.get_model("shares", "User")
    Preference = old.get_model("notifications", "NotificationPreference")
    alice = User.objects.get(username="alice")
    Preference.objects.update_or_create(
        user_id=alice.pk,
        defaults={
            "webhook_url": "https://hooks.example.org/gridwms",
            "email": True,
            "created": AT,
            "modified": AT,
        },
    )
    columns = _columns(_tables())
    before = _fingerprint(columns)
    assert before["matcher_job"][0] == 301 and before["matcher_taskqueuejob"][0] == 300

    migrate(None)  # the upgrade: one pass to the latest migrations

    assert _fingerprint(columns) == before
    from notifications.models import NotificationPreference

    kept = NotificationPreference.objects.get(user__username="alice")
    assert kept.webhook_url == "https://hooks.example.org/gridwms"
