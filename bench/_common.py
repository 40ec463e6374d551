"""What the benchmarks share: the project on sys.path, JSON-line output, a throw-away database.

Imported first by each bench script (`import _common`: a script's own folder is on sys.path),
so that the project's packages and settings are found before Django is imported.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gridwms.settings")


def emit(metric: str, value: float, unit: str, **context) -> None:
    """One result as one JSON line on stdout (bench/RESULTS.md, How the benchmarks report)."""
    print(json.dumps({"metric": metric, "value": round(value, 3), "unit": unit, **context}))
    sys.stdout.flush()


def database_url() -> str:
    """The server the benchmarks use: DATABASE_URL's, or else the checkout's embedded server,
    started if need be. DATABASE_URL is set to it before Django reads its settings, so that the
    processes a bench starts find the same server."""
    if not os.environ.get("DATABASE_URL"):
        from gridwms import embedded_pg

        os.environ["DATABASE_URL"] = embedded_pg.start()
    return os.environ["DATABASE_URL"]


@contextmanager
def throwaway_database(name: str = "bench") -> Iterator[None]:
    """Set Django up on a uniquely named throw-away database, never the one DATABASE_URL points
    at: Django's test database (migrated, DEBUG off), dropped on the way out."""
    database_url()
    import django
    from django.conf import settings

    settings.DATABASES["default"]["TEST"] = {"NAME": f"test_gridwms_{name}_{os.getpid()}"}
    django.setup()

    from django.db import connections
    from django.test.utils import (
        setup_databases,
        setup_test_environment,
        teardown_databases,
        teardown_test_environment,
    )

    setup_test_environment(debug=False)
    old_config = setup_databases(verbosity=0, interactive=False, serialized_aliases=set())
    try:
        yield
    finally:
        # Nothing of this process may still hold the database when it is dropped ("database
        # ... is being accessed by other users"): the matcher's housekeeping thread and the job
        # counts' folding thread have their own connections, so they are ended first, then
        # every connection of this thread closed.
        from matcher.services.housekeeping import housekeeper
        from matcher.services.rollups import folder

        housekeeper.stop()
        folder.stop()
        connections.close_all()
        _wait_for_other_sessions()
        teardown_databases(old_config, verbosity=0)
        teardown_test_environment()


def _wait_for_other_sessions(timeout: float = 30.0) -> None:
    """Until no session is left on the throw-away database: PostgreSQL ends the sessions of a
    process this bench stopped (a server, a matcher) a moment after it exits."""
    from django.db import connection

    name = connection.settings_dict["NAME"]
    deadline = time.monotonic() + timeout
    while True:
        with connection._nodb_cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                [name],
            )
            left = cur.fetchone()[0]
        if not left or time.monotonic() > deadline:
            return
        time.sleep(0.2)
