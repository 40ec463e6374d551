"""A user's or a JobSharing group's jobs in one state, newest first, as index ranges: (owner,
status, id) and (owner_group, status, id), each carrying the other owner column so that the
jobs list's visibility test is read from the index (web.matcher.job_ids: one narrow query per
visibility branch and state, merged). Without them `/api/v1/jobs/?status=finished` for a
JobSharing member walked every newer job of others or in other states (751 ms at 5M jobs).

Built CONCURRENTLY (the migration is not atomic: tests/test_migrations_concurrent_indexes.py):
the job writer goes on while they are built. A concurrent build that was interrupted leaves an
invalid index behind: it is dropped and built again. Like the name's trigram index (0017) they
are SQL only, not in Job.Meta.
"""

from django.db import migrations

INDEXES = {
    "job_owner_status_id": "(owner_id, status, id) INCLUDE (owner_group_id)",
    "job_group_status_id": "(owner_group_id, status, id) INCLUDE (owner_id)",
}


def create(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        for name, columns in INDEXES.items():
            cur.execute(
                "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name]
            )
            if (cur.fetchone() or [False])[0]:
                cur.execute(f"DROP INDEX CONCURRENTLY {name}")
            cur.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON matcher_job {columns}")


def drop(apps, schema_editor):
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("matcher", "0019_failed_job_counts"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
