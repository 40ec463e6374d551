"""What the benchmarks share: the project on sys.path, JSON-line output, a throw-away database.

Imported first by each bench script (`import _common`: a script's own folder is on sys.path),
so that the project's packages and settings are found before Django is imported.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gridwms.settings")


def emit(metric: str, value: float, unit: str, **context) -> None:
    """One result as one JSON line on stdout (DESIGN §7)."""
    print(json.dumps({"metric": metric, "value": round(value, 3), "unit": unit, **context}))
    sys.stdout.flush()


@contextmanager
def throwaway_database(name: str = "bench") -> Iterator[None]:
    """Set Django up on a uniquely named throw-away database, never the one DATABASE_URL points
    at: Django's test database (migrated, DEBUG off), dropped on the way out. SQLite gets a file
    in a temporary folder, so that other processes can open it too."""
    import django
    from django.conf import settings

    db = settings.DATABASES["default"]
    tmpdir = None
    if db["ENGINE"].endswith("sqlite3"):
        tmpdir = tempfile.mkdtemp(prefix="gridwms-bench-")
        db["TEST"] = {"NAME": str(Path(tmpdir) / f"{name}.sqlite3")}
    else:
        db["TEST"] = {"NAME": f"test_gridwms_{name}_{os.getpid()}"}
    django.setup()

    from django.db import connection
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
        connection.close()
        teardown_databases(old_config, verbosity=0)
        teardown_test_environment()
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
