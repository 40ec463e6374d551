"""PostgreSQL's bulk tools, shared by the apps that write many rows at once.

Bulk inserts (COPY, or one INSERT over arrays), typed VALUES lists, id
lists (`= ANY(array)`), session advisory locks, and the one test of a lost connection
(connection_failure: the matcher retries, the pages and the API answer 503): each
serves several owners of statements (the job services, timeouts, retention, the cycles, the
bulk loader). Tables are named by their models (`Model._meta.db_table`), never spelt here. The
base app's lowest layer: imports no app.

The statements of one concept stay with that concept: the claim in matcher/claims.py, the
job moves in matcher/services/moves.py, the priorities in matcher/taskqueue_priorities.py.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import psycopg
from django.db import InterfaceError, OperationalError, connection, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.deletion import get_candidate_relations_to_delete

# COPY data is written in pieces of this many bytes: one write per piece, not per row.
COPY_CHUNK = 1 << 20

# COPY text format: a backslash, tab, newline or carriage return inside a value is escaped.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
# COPY text format: NULL.
COPY_NULL = "\\N"


def table_of(model_or_table: type[models.Model] | str) -> str:
    """The table of a model (its `_meta.db_table`); a string is taken to be a table already."""
    if isinstance(model_or_table, str):
        return model_or_table
    return model_or_table._meta.db_table


# --- bulk insert -------------------------------------------------------------------------------


def copy_escape(value) -> str:
    """`value` as one field of PostgreSQL's COPY text format (not NULL: see copy_field)."""
    return str(value).translate(_COPY_ESCAPES)


def copy_field(value) -> str:
    """One COPY field: NULL as \\N, dates and times in ISO format, anything else as text."""
    if value is None:
        return COPY_NULL
    if hasattr(value, "isoformat"):
        return copy_escape(value.isoformat())
    return copy_escape(value)


def copy_text(rows: Iterable[Sequence]) -> str:
    """Rows as COPY text: fields separated by tabs, one line per row."""
    return "".join("\t".join([copy_field(v) for v in row]) + "\n" for row in rows)


def copy_in(cursor, table: str, columns: Sequence[str], data: bytes | str) -> None:
    """COPY ready-made text into `table` (psycopg 3). Callers that build the text
    themselves (matcher.bulk, from per-template pieces) skip copy_text's per-field work."""
    if isinstance(data, str):
        data = data.encode()
    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    with cursor.cursor.copy(sql) as cp:
        for start in range(0, len(data), COPY_CHUNK):
            cp.write(data[start : start + COPY_CHUNK])


def bulk_insert(
    cursor,
    model_or_table,
    columns: Sequence[str],
    rows: Sequence[Sequence],
    *,
    pg_types: Sequence[str] | None = None,
) -> int:
    """Insert `rows` (values in the order of `columns`) into the model's table; returns the
    number of rows. `cursor` None: a cursor of the default connection, closed afterwards.

    COPY (the fastest way in), or, with `pg_types` (one SQL type per column), one INSERT …
    SELECT over unnest(arrays): a single statement, for a few hundred rows that a COPY would not
    pay off."""
    if not rows:
        return 0
    if cursor is None:
        with connection.cursor() as cur:
            return bulk_insert(cur, model_or_table, columns, rows, pg_types=pg_types)
    table = table_of(model_or_table)
    if pg_types is None:
        copy_in(cursor, table, columns, copy_text(rows))
    else:
        arrays = ", ".join(f"%s::{t}[]" for t in pg_types)
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM unnest({arrays})",
            [list(col) for col in zip(*rows, strict=True)],
        )
    return len(rows)


# --- id lists and updates from values ----------------------------------------------------------


def id_in(column_sql: str, ids: Sequence[int]) -> tuple[str, list]:
    """A WHERE condition `column_sql` in `ids`, and its parameters: `= ANY(%s)`, one array
    parameter, cheap to bind and plan whatever the number of ids. `column_sql` is quoted by
    the caller as it needs. An empty `ids` matches nothing."""
    return f"{column_sql} = ANY(%s)", [list(ids)]


def among(queryset, field: str, ids: Sequence[int]) -> Iterator:
    """`queryset` restricted to `ids` (one `= ANY(array)`: cheap to bind and plan whatever
    their number), as the one piece its callers iterate over; none for no ids."""
    ids = list(ids)
    if not ids:
        return
    model = queryset.model
    column = f'"{model._meta.db_table}"."{model._meta.get_field(field).column}"'
    where, params = id_in(column, ids)
    yield queryset.extra(where=[where], params=params)


def values_sql(casts: Sequence[str | None], n: int) -> str:
    """Placeholders for `n` rows of a VALUES list, each column cast to its SQL type when one is
    given (the types of a VALUES list come from its values: a NULL or a text parameter would
    otherwise not compare with a bigint or write into a jsonb column)."""
    one = ", ".join("%s" if c is None else f"%s::{c}" for c in casts)
    return ", ".join([f"({one})"] * n)


# --- advisory locks ------------------------------------------------------------------------------


def advisory_key(name: str) -> int:
    """A stable lock key for a name (a positive 31-bit number: any PostgreSQL bigint)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def _key(key: int | str) -> int:
    return advisory_key(key) if isinstance(key, str) else key


def try_advisory_lock(key: int | str, conn=None) -> bool:
    """Take the session advisory lock `key` (a name or a number) if nobody holds it; whether we
    now hold it. It dies with the session, so a crashed process never leaves it behind."""
    conn = conn or connection
    with conn.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s)", [_key(key)])
        return bool(cur.fetchone()[0])


def advisory_unlock(key: int | str, conn=None) -> None:
    """Release a session advisory lock taken by this session."""
    conn = conn or connection
    with conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_unlock(%s)", [_key(key)])


@contextmanager
def advisory_lock(key: int | str, conn=None) -> Iterator[None]:
    """Hold the session advisory lock `key` for the block, waiting for it if another session
    has it."""
    conn = conn or connection
    with conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_lock(%s)", [_key(key)])
    try:
        yield
    finally:
        advisory_unlock(key, conn)


def plain_dependents(model: type[models.Model]) -> list[tuple[str, str, str]] | None:
    """What deleting rows of `model` does to the rows pointing at them, from the relations
    Django knows (so a relation added later is honoured): [(action, table, column)], action
    "delete" or "null"; None when a dependent has dependents of its own (then Django's
    collector does the deletion, slower but complete)."""
    out = []
    for rel in get_candidate_relations_to_delete(model._meta):  # hidden ones ("+") too
        if rel.many_to_many or not rel.field.target_field.primary_key:
            return None
        if rel.on_delete is models.DO_NOTHING:
            continue
        related = rel.related_model
        if rel.on_delete is models.SET_NULL:
            out.append(("null", related._meta.db_table, rel.field.column))
        elif rel.on_delete is models.CASCADE:
            nested = get_candidate_relations_to_delete(related._meta)
            if any(r.on_delete is not models.DO_NOTHING for r in nested):
                return None
            out.append(("delete", related._meta.db_table, rel.field.column))
        else:
            return None  # PROTECT, RESTRICT, SET_DEFAULT...: let Django decide
    return out


# --- a lost connection ------------------------------------------------------------------------

# SQLSTATEs of a failed connection rather than a failed statement: class 08 (connection
# exception), too many connections, and 57P0x: the session ended by an administrator, a crash,
# a server still starting, its database dropped or its idle timeout.
_CONNECTION_STATES = ("08", "53300", "57P0")
_CONNECT = getattr(BaseDatabaseWrapper.connect, "__wrapped__", BaseDatabaseWrapper.connect).__code__


def connection_failure(exc: BaseException | None) -> bool:
    """The database refused or lost the connection (server down, full, shutting down or
    restarted, unreachable, the pool exhausted): worth retrying. The one test of it, for errors
    from Django's cursors and from psycopg's own (the matcher's prepared statements run on a
    raw cursor, unwrapped). A failed statement, even an OperationalError (a deadlock, a
    timeout, a serialization failure), is not: it stays a 500, a bug to see."""
    if isinstance(exc, (OperationalError, InterfaceError)):  # Django's, the driver's as cause
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is _CONNECT:  # raised while connecting, whatever the backend
                return True
            tb = tb.tb_next
        driver = exc.__cause__
        if driver is None or not hasattr(driver, "sqlstate"):
            # An error without a SQLSTATE (none from the server) is not a lost connection.
            return False
        return _driver_connection_failure(driver)
    return _driver_connection_failure(exc)


def _driver_connection_failure(exc: BaseException | None) -> bool:
    """psycopg's error: one with a connection SQLSTATE, or the client's own OperationalError
    (no SQLSTATE: the socket closed under it, the pool had no connection to give)."""
    if not isinstance(exc, psycopg.Error):
        return False
    if exc.sqlstate is None:
        return isinstance(exc, psycopg.OperationalError)
    return connection_sqlstate(exc.sqlstate)


def connection_sqlstate(state: str) -> bool:
    """Whether a SQLSTATE says the connection failed, not the statement."""
    return state.startswith(_CONNECTION_STATES)
