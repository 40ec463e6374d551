"""Migrating the test database back and forth, for tests of a model moved between apps: the
database is migrated to a point before the move, written through the historical models, then
migrated forward and read through today's."""

from collections.abc import Iterator

from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets):
    """Migrate to `targets` (None: the latest of every app); the state the database is at."""
    executor = MigrationExecutor(connection)
    if targets is None:
        targets = executor.loader.graph.leaf_nodes()
    state = executor.migrate(targets)
    ContentType.objects.clear_cache()
    return state


def historical_apps(targets) -> Iterator:
    """Yield the historical apps at `targets`; the database is left at the latest migrations
    whatever happens (for a fixture of a transactional_db test)."""
    try:
        yield migrate(targets).apps
    finally:
        migrate(None)
        executor = MigrationExecutor(connection)
        assert not executor.migration_plan(executor.loader.graph.leaf_nodes()), (
            "the test database must be left at the latest migrations"
        )
