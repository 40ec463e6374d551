"""The job lifecycle's one writer (docs/developer-guide.md, One writer of the job tables), seen
at run time: every statement that
writes a job table (a job, its status history, its TaskQueue membership, the per-priority
counts; creating or deleting a TaskQueue) must come from the lifecycle's owner,
matcher.services or the claim statement of matcher/claims.py. `job_writes_outside_owner()`
records, while it is open, each such statement whose nearest project code is elsewhere.

tests/test_one_job_writer.py reads the source for the same; tests/test_lifecycle_invariants.py
runs the simulated grid under the recorder.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(settings.BASE_DIR).resolve()
# The lifecycle's owner: the only modules that may write the job tables.
OWNER = ("matcher/services/", "matcher/claims.py")


def _tables() -> tuple[set[str], str]:
    from matcher.models import Job, JobStatusHistory, TaskQueue, TaskQueueJob
    from matcher.models import TaskQueuePriorityCount as Counts

    return {m._meta.db_table for m in (Job, JobStatusHistory, TaskQueueJob, Counts)}, (
        TaskQueue._meta.db_table
    )


JOB_TABLES, TASKQUEUE_TABLE = _tables()
_VERBS = r"INSERT\s+INTO|DELETE\s+FROM|COPY|TRUNCATE(?:\s+TABLE)?"
_JOBS = "|".join(sorted(JOB_TABLES, key=len, reverse=True))
# SQL writing a job table, or creating or deleting TaskQueues (their priorities are the
# priorities cycle's: an UPDATE of the TaskQueue table is no lifecycle write).
SQL_WRITE = re.compile(
    rf'\b(?:(?:{_VERBS}|UPDATE)\s+"?(?:{_JOBS})|(?:{_VERBS})\s+"?{TASKQUEUE_TABLE})\b"?',
    re.IGNORECASE,
)


# The database tricks write what their caller hands them: the caller is the writer.
TOOLS = ("core/db.py",)


def _is_test(rel: str) -> bool:
    parts = rel.split("/")
    return "tests" in parts or parts[-1].startswith(("test_", "conftest"))


def _writer() -> str | None:
    """The project module nearest to the statement being run (None: none, or a test's)."""
    frame = sys._getframe(2)
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if path.is_absolute() and path.is_relative_to(ROOT) and ".venv" not in path.parts:
            rel = path.relative_to(ROOT).as_posix()
            if rel not in TOOLS:
                return None if _is_test(rel) else rel
        frame = frame.f_back
    return None


@contextmanager
def job_writes_outside_owner() -> Iterator[dict[str, set[str]]]:
    """{module: statements} of the job-table writes made, while open, by project code other
    than the owner, on this thread's connection."""
    found: dict[str, set[str]] = {}

    def watch(execute, sql, params, many, context):
        match = SQL_WRITE.search(sql)
        if match:
            module = _writer()
            if module and not module.startswith(OWNER):
                found.setdefault(module, set()).add(" ".join(match.group(0).split()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        yield found
