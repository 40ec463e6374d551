"""Index changes on the big tables are built concurrently (docs/developer-guide.md, Migrations
on the big tables): a plain CREATE INDEX holds a SHARE lock on its table until the index is
built, and every job move, claim and pilot report waits that long (seconds at a million jobs).

The rule is read from every migration of the project: on the job table, the job status
history, the TaskQueue membership and the accounting bins, an index is added or removed only
by AddIndexConcurrently / RemoveIndexConcurrently (or SQL with CONCURRENTLY) in a non-atomic
migration, and no field is added or altered with an index of its own. The migrations written
before the rule are history, listed here by name; a new one is never listed.

And the project's way really applies: a non-atomic migration adding an index concurrently to
the job table migrates forward and back on the test database.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import connection, migrations, models
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

# The big tables: (app label, model name as migrations write it).
BIG = {
    ("matcher", "job"),
    ("matcher", "jobstatushistory"),
    ("matcher", "taskqueuejob"),
    ("accounting", "accountingbin"),
}
BIG_TABLES = {"matcher_job", "matcher_jobstatushistory", "matcher_taskqueuejob"} | {
    "accounting_accountingbin"
}
# Written before the rule (history, applied everywhere): each builds or drops an index on a big
# table inside its transaction. Never add a migration here.
GRANDFATHERED = {
    ("matcher", "0002_initial"),
    ("matcher", "0008_pilots_per_credential_and_job_pilot"),
    ("matcher", "0011_list_indexes"),
    ("matcher", "0012_owner_sort_indexes"),
}
PLAIN = (migrations.AddIndex, migrations.RemoveIndex, migrations.AlterIndexTogether)
CONCURRENT = (AddIndexConcurrently, RemoveIndexConcurrently)
CREATE_INDEX = re.compile(
    r"\b(CREATE\s+(UNIQUE\s+)?INDEX|DROP\s+INDEX|REINDEX)\b(?!\s+CONCURRENTLY)", re.IGNORECASE
)


def _operations(operations):
    for op in operations:
        if isinstance(op, migrations.SeparateDatabaseAndState):
            yield from _operations(op.database_operations)
        else:
            yield op


def _indexed(field) -> bool:
    return bool(field.db_index or field.unique or getattr(field, "primary_key", False))


def _sql_text(sql) -> str:
    if isinstance(sql, list | tuple):
        return " ".join(_sql_text(s) for s in sql)
    return "" if sql is migrations.RunSQL.noop else str(sql)


def violations(loader: MigrationLoader) -> dict[tuple[str, str], list[str]]:
    """Each migration's index changes on a big table that are not built concurrently."""
    found: dict[tuple[str, str], list[str]] = {}
    for key, migration in sorted(loader.disk_migrations.items()):
        app = key[0]
        bad = []
        before = None
        for op in _operations(migration.operations):
            model = getattr(op, "model_name", None) or getattr(op, "name", "")
            big = (app, str(model).lower()) in BIG
            if isinstance(op, CONCURRENT):
                if migration.atomic:
                    bad.append(f"{op.describe()} in an atomic migration (set atomic = False)")
            elif isinstance(op, PLAIN) and big:
                bad.append(op.describe())
            elif isinstance(op, migrations.AddField) and big and _indexed(op.field):
                bad.append(
                    f"{op.describe()} with its own index (db_index=False, then concurrently)"
                )
            elif isinstance(op, migrations.AlterField) and big and _indexed(op.field):
                if before is None:
                    before = loader.project_state(key, at_end=False)
                old = before.models[app, op.model_name_lower].fields[op.name]
                if not _indexed(old):
                    bad.append(f"{op.describe()} adds an index (db_index=False, then concurrently)")
            elif isinstance(op, migrations.RunSQL):
                text = _sql_text(op.sql)
                if CREATE_INDEX.search(text) and any(t in text for t in BIG_TABLES):
                    bad.append("RunSQL building or dropping an index without CONCURRENTLY")
        if bad:
            found[key] = bad
    return found


def test_no_migration_after_the_rule_builds_an_index_on_a_big_table_inside_a_transaction():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    found = violations(loader)
    new = {
        f"{app}.{name}": ops
        for (app, name), ops in found.items()
        if (app, name) not in GRANDFATHERED
    }
    assert not new, (
        "index changes on a big table must be AddIndexConcurrently/RemoveIndexConcurrently in a "
        f"non-atomic migration (docs/developer-guide.md, Migrations on the big tables): {new}"
    )


def test_the_grandfathered_migrations_exist_and_each_still_breaks_the_rule():
    """The list is history, not a way around the rule: each name is a migration on disk that
    the check would refuse (a stale or spare name fails here)."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    found = violations(loader)
    assert GRANDFATHERED <= set(loader.disk_migrations)
    assert GRANDFATHERED <= set(found), sorted(GRANDFATHERED - set(found))


def test_the_check_refuses_a_plain_index_an_indexed_field_and_raw_sql_on_the_job_table():
    """The check itself: a made-up migration of each forbidden kind is caught, the concurrent
    one in a non-atomic migration passes."""

    def made_up(*operations, atomic=True):
        cls = type("Migration", (migrations.Migration,), {"operations": list(operations)})
        cls.atomic = atomic
        return cls("9999_made_up", "matcher")

    index = models.Index(fields=["hostname"], name="job_hostname_made_up")
    loader = MigrationLoader(None, ignore_no_migrations=True)
    leaf = next(n for n in loader.graph.leaf_nodes() if n[0] == "matcher")
    cases = {
        "plain": made_up(migrations.AddIndex("job", index)),
        "remove": made_up(migrations.RemoveIndex("job", "job_status_changed")),
        "field": made_up(migrations.AddField("job", "x", models.IntegerField(db_index=True))),
        "sql": made_up(migrations.RunSQL("CREATE INDEX j ON matcher_job (hostname)")),
        "atomic": made_up(AddIndexConcurrently("job", index)),
        "fine": made_up(AddIndexConcurrently("job", index), atomic=False),
        "fine_sql": made_up(
            migrations.RunSQL("CREATE INDEX CONCURRENTLY j ON matcher_job (hostname)"),
            atomic=False,
        ),
        "other_table": made_up(
            migrations.AddIndex("site", models.Index(fields=["name"], name="s"))
        ),
    }
    caught = set()
    for name, migration in cases.items():
        loader.disk_migrations = {("matcher", migration.name): migration}
        migration.dependencies = [leaf]
        if violations(loader):
            caught.add(name)
    assert caught == {"plain", "remove", "field", "sql", "atomic"}


@pytest.mark.django_db(transaction=True)
def test_a_non_atomic_migration_adds_and_removes_an_index_on_the_job_table_concurrently():
    name = "job_concurrent_probe"
    index = models.Index(fields=["hostname", "id"], name=name)
    executor = MigrationExecutor(connection)
    leaf = next(n for n in executor.loader.graph.leaf_nodes() if n[0] == "matcher")
    cls = type(
        "Migration",
        (migrations.Migration,),
        {
            "atomic": False,
            "dependencies": [leaf],
            "operations": [AddIndexConcurrently("job", index)],
        },
    )
    migration = cls("9999_concurrent_probe", "matcher")
    before = executor.loader.project_state()

    def valid_index():
        with connection.cursor() as cur:
            cur.execute(
                "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname = %s",
                [name],
            )
            row = cur.fetchone()
        return None if row is None else row[0]

    with connection.execute_wrapper(_recording := _Recorder()):
        executor.apply_migration(before, migration)
    try:
        assert valid_index() is True, "built and valid"
        assert any("CREATE INDEX CONCURRENTLY" in sql for sql in _recording.sql)
        assert executor.recorder.applied_migrations().get(("matcher", migration.name))
    finally:
        with connection.execute_wrapper(_recording := _Recorder()):
            executor.unapply_migration(before, migration)
    assert valid_index() is None, "dropped on the way back"
    assert any("DROP INDEX CONCURRENTLY" in sql for sql in _recording.sql)
    assert ("matcher", migration.name) not in executor.recorder.applied_migrations()


class _Recorder:
    def __init__(self):
        self.sql: list[str] = []

    def __call__(self, execute, sql, params, many, context):
        self.sql.append(str(sql))
        return execute(sql, params, many, context)
