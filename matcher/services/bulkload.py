"""Writing loads of new activated jobs in bulk (matcher.bulk's loader), for the demo and scale work.

The rows: the loader sends, per job, five numbers (id, template, CPU time, UserPriority,
TaskQueue) by COPY into a temporary table; one INSERT ... SELECT per table makes the jobs
(joined with their template's constant columns), their memberships and their history rows.
The database then parses no JSON and no timestamp per job, and the loader formats five integers
per job, not three tables' text.

Foreign keys: each row inserted queues checks of what it refers to (five per job: owner, group,
job twice, TaskQueue), run one by one at commit, about half of a load's time. Where the
database user may set session_replication_role (a superuser, or one granted SET on it) and the
job tables carry no trigger but their foreign keys' and exactly the foreign keys known here, a
load turns those per-row checks off for its own transaction only and takes, once, the locks the
checks would take: FOR KEY SHARE on the users, groups and TaskQueues its jobs name, a missing
one failing the load as the checks would; the memberships and history rows name jobs the same
transaction inserts. Elsewhere the checks run: slower, the same rows.

Indexes (`bulk_build_wanted`, `indexes_built_after`): a load of at least BULK_BUILD_FROM jobs
into a job table holding fewer rows than the load, in a transaction of its own, drops the job
tables' secondary indexes inside that transaction and builds them again before its commit
(sorted once, not maintained entry by entry: a third of the cost). It first takes ACCESS
EXCLUSIVE locks on the three job tables, waiting at most LOCK_TIMEOUT (else the load goes batch
by batch): nobody reads or writes them until the load commits, so no one sees a table without
its indexes or half a load; the grid's moves wait for the load, then go on. Primary keys and
unique indexes are never dropped. A build writes every index page to the WAL whole; where the
session may (a superuser's setting), those pages go compressed (lz4: a third of the bytes), for
the builds only: still logged, a crash loses nothing.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from django.db import DatabaseError, connection, transaction

from core import db
from matcher import taskqueues
from matcher.lifecycle import ACTIVATED, NEW
from matcher.models import Job, JobStatusHistory, TaskQueue, TaskQueueJob
from matcher.services import enqueue, moves, rollups
from shares.models import GridGroup, User

log = logging.getLogger(__name__)

JOBS = Job._meta.db_table
MEMBERS = TaskQueueJob._meta.db_table
HISTORY = JobStatusHistory._meta.db_table
TABLES = (JOBS, MEMBERS, HISTORY)

# A load this large into a smaller job table builds the indexes at the end (module docstring).
BULK_BUILD_FROM = 100_000
LOCK_TIMEOUT = "2s"
# Memory for each index build (in memory, not in sorted runs on disk), for the load's own session.
BUILD_MEMORY_MB = 256
# The index builds' WAL (whole pages, as much as the indexes) compressed: a third of the bytes.
WAL_COMPRESSION = "lz4"

_ROWS = "bulkload_rows"  # temporary tables of the load's session
_TEMPLATES = "bulkload_templates"
_FIELDS = taskqueues.MULTI_VALUED_FIELDS


class Busy(Exception):
    """The job tables could not be locked for a load that builds their indexes."""


class ReferenceMissing(Exception):
    """A user, group or TaskQueue the loaded jobs name does not exist (any more)."""


@dataclass(frozen=True)
class JobTemplate:
    """What the jobs of one template share. They are named name_prefix + their id in at least
    seven digits; `requirements`: {field: canonical list} for every multi-valued field."""

    owner_id: int
    owner_group_id: int
    name_prefix: str
    setup: str
    requirements: dict


@dataclass
class StagedBatch:
    """A batch of jobs ready to write: `rows`, COPY text of (id, template index, CPU time,
    UserPriority, TaskQueue) per job, in id order; when it was drawn; its per-priority counts
    {(TaskQueue, UserPriority): n} and its jobs per {(owner, group): n}."""

    rows: bytes
    at: datetime
    size: int
    counts: Counter
    rollup: Counter = field(default_factory=Counter)
    history_ids: range | None = None  # reserved for its history rows, else the table's default


# --- job ids -------------------------------------------------------------------------------------


def reserve_job_ids(n: int) -> Sequence[int]:
    """`n` job ids, reserved for good (reserve_ids), else one nextval per id
    (moves.reserve_job_ids: a million of them take seconds)."""
    return reserve_ids(Job, n) or moves.reserve_job_ids(n)


def reserve_ids(model, n: int) -> range | None:
    """`n` ids of the model's table, reserved for good: one range from its sequence, in a short
    transaction of its own that holds the sequence for a moment (ALTER SEQUENCE's lock: no other
    nextval in between). None inside a caller's transaction (the lock would last until it ends)
    or if the sequence stays busy or does not count by one."""
    if n <= 0 or connection.in_atomic_block:
        return None
    try:
        with transaction.atomic(), connection.cursor() as cur:
            table, column = model._meta.db_table, model._meta.pk.column
            cur.execute("SELECT pg_get_serial_sequence(%s, %s)", [table, column])
            seq = cur.fetchone()[0]
            cur.execute("SELECT seqincrement FROM pg_sequence WHERE seqrelid = %s::regclass", [seq])
            if cur.fetchone()[0] != 1:
                return None
            cur.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            cur.execute(f"ALTER SEQUENCE {seq} INCREMENT BY 1")  # its lock, until the commit
            cur.execute("SELECT nextval(%s)", [seq])
            first = cur.fetchone()[0]
            cur.execute("SELECT setval(%s, %s)", [seq, first + n - 1])
        return range(first, first + n)
    except DatabaseError as exc:
        log.info("ids one by one: %s", exc)
        return None


# --- the rule for building indexes at the end ----------------------------------------------------


def bulk_build_wanted(n: int, force: bool | None = None) -> bool:
    """Whether a load of `n` jobs builds the indexes at the end: `force` if given, else a load
    of at least BULK_BUILD_FROM jobs into a job table holding fewer rows, outside any caller's
    transaction (whose tables would stay locked until it ends)."""
    if force is not None:
        return force
    if n < BULK_BUILD_FROM or connection.in_atomic_block:
        return False
    return table_rows(limit=n) < n


def table_rows(limit: int) -> int:
    """The job table's rows as the planner knows them, counted (up to `limit`) if never analysed."""
    with connection.cursor() as cur:
        cur.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [JOBS])
        estimate = cur.fetchone()[0]
        if estimate >= 0:
            return int(estimate)
        cur.execute(f"SELECT count(*) FROM (SELECT 1 FROM {JOBS} LIMIT %s) s", [limit])
        return cur.fetchone()[0]


def _setting(cur, name: str) -> str:
    cur.execute("SELECT current_setting(%s)", [name])
    return cur.fetchone()[0]


@contextmanager
def indexes_built_after(cur) -> Iterator[list[str]]:
    """Inside the load's transaction: lock the job tables (Busy if not within LOCK_TIMEOUT), drop
    their secondary indexes, let the load write, then build each again as it was; yields the
    indexes' names. Unique, invalid, clustered or commented indexes stay as they are."""
    was = _setting(cur, "lock_timeout")
    try:
        with transaction.atomic():  # a savepoint: a refused lock leaves the transaction usable
            cur.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            cur.execute(f"LOCK TABLE {', '.join(TABLES)} IN ACCESS EXCLUSIVE MODE")
    except DatabaseError as exc:
        raise Busy(f"the job tables are busy: {exc}") from exc
    cur.execute("SELECT set_config('lock_timeout', %s, true)", [was])
    cur.execute(
        """
        SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
        FROM pg_index i
        WHERE i.indrelid = ANY(%s::regclass[]) AND NOT i.indisunique AND NOT i.indisprimary
          AND i.indisvalid AND i.indisready AND NOT i.indisclustered
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
          AND obj_description(i.indexrelid, 'pg_class') IS NULL
        ORDER BY i.indrelid, i.indexrelid
        """,
        [list(TABLES)],
    )
    indexes = cur.fetchall()
    for name, _definition in indexes:
        cur.execute(f"DROP INDEX {name}")
    yield [name for name, _ in indexes]
    cur.execute(
        "SELECT set_config('maintenance_work_mem', %s, true) "
        "WHERE pg_size_bytes(current_setting('maintenance_work_mem')) < %s",
        [f"{BUILD_MEMORY_MB}MB", BUILD_MEMORY_MB << 20],
    )
    # A build writes each index page to the WAL whole: compressed, where this session may.
    was_compression = _set_local_if_allowed(cur, "wal_compression", WAL_COMPRESSION)
    for _name, definition in indexes:
        cur.execute(definition)
    if was_compression is not None:
        cur.execute("SELECT set_config('wal_compression', %s, true)", [was_compression])


def _set_local_if_allowed(cur, name: str, value: str) -> str | None:
    """SET LOCAL `name` to `value` if this session may (a superuser's setting) and the server
    knows the value; returns the value it had, None if refused."""
    was = _setting(cur, name)
    try:
        with transaction.atomic():  # a savepoint: a refusal leaves the transaction usable
            cur.execute("SELECT set_config(%s, %s, true)", [name, value])
    except DatabaseError:
        log.info("%s = %s not settable here", name, value)
        return None
    return was


# --- foreign keys --------------------------------------------------------------------------------

# The foreign keys of the job tables whose checks a load replaces by its own locks:
# (table, column) -> referenced table.
_KNOWN_KEYS = {
    (JOBS, "owner_id"): User._meta.db_table,
    (JOBS, "owner_group_id"): GridGroup._meta.db_table,
    (MEMBERS, "job_id"): JOBS,
    (MEMBERS, "task_queue_id"): TaskQueue._meta.db_table,
    (HISTORY, "job_id"): JOBS,
}


def _checks_replaceable(cur) -> bool:
    cur.execute(
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = ANY(%s::regclass[]) AND NOT tgisinternal",
        [list(TABLES)],
    )
    if cur.fetchone()[0]:
        return False  # a trigger of someone's: it must fire
    cur.execute(
        """
        SELECT c.conrelid::regclass::text, a.attname, c.confrelid::regclass::text
        FROM pg_constraint c JOIN pg_attribute a
          ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
        WHERE c.contype = 'f' AND c.conrelid = ANY(%s::regclass[])
        """,
        [list(TABLES)],
    )
    return {(t, col): ref for t, col, ref in cur.fetchall()} == _KNOWN_KEYS


def hold_references(cur, users: set[int], groups: set[int], tqs: set[int]) -> None:
    """Lock the users, groups and TaskQueues the jobs about to be written name, FOR KEY SHARE as
    a foreign-key check does, until the transaction ends: none of them can be deleted under the
    load. ReferenceMissing names those that do not exist."""
    for model, ids in ((User, users), (GridGroup, groups), (TaskQueue, tqs)):
        table = model._meta.db_table
        cur.execute(
            f"SELECT id FROM {table} WHERE id = ANY(%s) ORDER BY id FOR KEY SHARE", [sorted(ids)]
        )
        if missing := set(ids) - {r[0] for r in cur.fetchall()}:
            raise ReferenceMissing(f"no {model._meta.verbose_name} {sorted(missing)}")


@contextmanager
def foreign_key_checks_off(cur) -> Iterator[bool]:
    """Where allowed (module docstring), no per-row foreign-key check of the rows written inside
    (call hold_references first: its locks are the checks); yields whether they are off."""
    relaxed = False
    was = _setting(cur, "session_replication_role")
    if was == "origin" and _checks_replaceable(cur):
        try:
            with transaction.atomic():  # a savepoint: a refusal leaves the transaction usable
                cur.execute("SET LOCAL session_replication_role = replica")
            relaxed = True
        except DatabaseError:
            log.info("session_replication_role not settable: foreign keys checked row by row")
    yield relaxed  # a failure inside rolls the setting back with its savepoint or transaction
    if relaxed:
        # SET LOCAL would last to the end of a caller's transaction: back at once.
        cur.execute("SELECT set_config('session_replication_role', %s, true)", [was])


# --- the rows ------------------------------------------------------------------------------------

# No ORDER BY: the batch's temporary table, emptied after each batch, is read in the order
# COPY wrote it (id order) and the join hashes the few templates, so the rows go in id order
# without a sort (which for the wide job rows spilled to disk, a second per million jobs).

_JOB_SQL = f"""
INSERT INTO {JOBS} (id, owner_id, owner_group_id, name, setup, cpu_time, {", ".join(_FIELDS)},
    user_priority, status, status_reason, task_queue_id, site, jdl, reschedule_count, created,
    status_changed)
SELECT s.id, t.owner_id, t.owner_group_id,
    t.prefix || lpad(s.id::text, greatest(7, length(s.id::text)), '0'), t.setup, s.cpu,
    {", ".join(f"t.{f}" for f in _FIELDS)}, s.prio, %(status)s, %(waiting)s, s.tq, '', '', 0,
    %(at)s, %(at)s
FROM {_ROWS} s JOIN {_TEMPLATES} t ON t.i = s.tpl
"""
_MEMBER_SQL = f"""
INSERT INTO {MEMBERS} (job_id, task_queue_id, user_priority)
SELECT id, tq, prio FROM {_ROWS}
"""
_HISTORY_SQL = f"""
INSERT INTO {HISTORY} (job_id, at, from_status, to_status, reason)
SELECT id, %(at)s, %(new)s, %(status)s, %(reason)s || tq FROM {_ROWS}
"""
# With ids reserved (a range): no nextval per row.
_HISTORY_IDS_SQL = f"""
INSERT INTO {HISTORY} (id, job_id, at, from_status, to_status, reason)
SELECT %(first)s + row_number() OVER () - 1, id, %(at)s, %(new)s, %(status)s, %(reason)s || tq
FROM {_ROWS}
"""


class Writer:
    """Writes staged batches in the caller's transaction, on `cur`: `open` makes the session's
    temporary tables, `write` a batch's jobs, memberships and history rows, `close` (the end of
    the transaction's writes) the per-priority counts and the job counts, and drops them."""

    def __init__(self, cur, templates: Sequence[JobTemplate], waiting: str, reason: str):
        self.cur, self.templates = cur, templates
        self.waiting, self.reason = waiting, reason
        self.counts: Counter = Counter()
        self.rollups: list[tuple[datetime, Counter]] = []

    def open(self) -> Writer:
        moves.check_move(moves.SUBMISSION, None, NEW, ACTIVATED)
        cur = self.cur
        cur.execute(
            f"CREATE TEMPORARY TABLE {_ROWS} (id bigint, tpl integer, cpu integer, "
            "prio integer, tq bigint) ON COMMIT DROP"
        )
        cols = ("i", "owner_id", "owner_group_id", "prefix", "setup", *_FIELDS)
        types = ("integer", "bigint", "bigint", "text", "text", *["jsonb"] * len(_FIELDS))
        cur.execute(
            f"CREATE TEMPORARY TABLE {_TEMPLATES} ("
            + ", ".join(f"{c} {t}" for c, t in zip(cols, types, strict=True))
            + ") ON COMMIT DROP"
        )
        rows = [
            (i, t.owner_id, t.owner_group_id, t.name_prefix, t.setup, *json_lists)
            for i, t in enumerate(self.templates)
            for json_lists in [[json.dumps(t.requirements[f]) for f in _FIELDS]]
        ]
        db.bulk_insert(cur, _TEMPLATES, cols, rows, pg_types=types)
        cur.execute(f"ANALYZE {_TEMPLATES}")
        return self

    def write(self, batch: StagedBatch) -> None:
        cur = self.cur
        db.copy_in(cur, _ROWS, ("id", "tpl", "cpu", "prio", "tq"), batch.rows)
        params = {
            "status": ACTIVATED,
            "waiting": self.waiting,
            "at": batch.at,
            "new": NEW,
            "reason": f"{self.reason}; joined TaskQueue ",
        }
        cur.execute(_JOB_SQL, params)
        cur.execute(_MEMBER_SQL, params)
        if batch.history_ids is None:
            cur.execute(_HISTORY_SQL, params)
        else:
            assert len(batch.history_ids) == batch.size
            cur.execute(_HISTORY_IDS_SQL, {**params, "first": batch.history_ids.start})
        cur.execute(f"TRUNCATE {_ROWS}")
        self.counts.update(batch.counts)
        self.rollups.append((batch.at, batch.rollup))

    def close(self) -> None:
        # The counts last: concurrent writers hold those rows only for the moment of the commit.
        enqueue.add_to_counts(self.counts)
        for at, per_owner in self.rollups:
            rollups.record_counts(
                Counter({(o, g, "", NEW, "", ACTIVATED): n for (o, g), n in per_owner.items()}),
                at,
            )
        self.cur.execute(f"DROP TABLE IF EXISTS {_ROWS}, {_TEMPLATES}")
