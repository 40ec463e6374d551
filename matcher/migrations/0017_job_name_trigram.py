"""Search by part of a job's name through a trigram index (pg_trgm).

The jobs list's free-text search (`q`, web.core.listing.SearchFilter: Django's `icontains`,
`UPPER(name::text) LIKE UPPER('%text%')`) read the whole job table: a GIN trigram index on that
same expression, upper(name), serves it unchanged. Built CONCURRENTLY (the migration is not
atomic): writes to the jobs go on while it is built.

pg_trgm is created here when the database user may create it (a superuser, as the embedded
server's is; since PostgreSQL 13 also the owner of the database, pg_trgm being a trusted
extension). Where it may not, the migration still succeeds and builds no index: the search
gives the same answers, by reading the table (docs/operator-guide.md, "Search by part of a
name"). The index is not in Job.Meta for that reason: a database may lack it.
"""

from django.db import migrations, transaction
from django.db.utils import DatabaseError

INDEX = "job_name_trgm"


def create(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cur:
        try:
            # Its own transaction (a savepoint inside one): a refusal leaves nothing aborted.
            with transaction.atomic(using=connection.alias):
                cur.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except DatabaseError:
            # Not allowed here (no CREATE on the database, or not available on the server):
            # the search reads the table instead.
            cur.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
            if cur.fetchone() is None:
                return
        # A concurrent build that was interrupted leaves an invalid index behind: built again.
        cur.execute(
            "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [INDEX]
        )
        if (cur.fetchone() or [False])[0]:
            cur.execute(f"DROP INDEX CONCURRENTLY {INDEX}")
        cur.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX} ON matcher_job "
            "USING gin (upper(name::text) gin_trgm_ops)"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("matcher", "0016_job_rollups"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
