"""The database tricks, in one place, behind plain functions.

Bulk inserts (COPY or one INSERT over arrays on PostgreSQL, executemany on SQLite), updates of
many rows from a VALUES list, id lists (`= ANY(array)` or `IN (...)`), id reservation ahead
of an insert, and session advisory locks. Each function does the same thing on SQLite and on
PostgreSQL (config/tests/test_db.py checks it on whichever the suite runs on); the branches
exist only because the fast way differs. Tables are named by their models
(`Model._meta.db_table`), never spelt here. The base app's lowest layer: imports no app.

The claim statements are not here: they stay together in matcher/claims.py.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime

from django.db import connection, models
from django.db.models.deletion import get_candidate_relations_to_delete

# COPY data is written in pieces of this many bytes: one write per piece, not per row.
COPY_CHUNK = 1 << 20
# Rows per UPDATE … FROM (VALUES …) statement: large enough to save round trips, small enough
# to stay far below PostgreSQL's 65,535 parameters per statement.
UPDATE_CHUNK = 2000

# COPY text format: a backslash, tab, newline or carriage return inside a value is escaped.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
# COPY text format: NULL.
COPY_NULL = "\\N"


def is_postgresql(conn=None) -> bool:
    return (conn or connection).vendor == "postgresql"


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
    """COPY ready-made text into `table` (PostgreSQL; psycopg 3). Callers that build the text
    themselves (matcher.bulk, from per-template pieces) skip copy_text's per-field work."""
    if isinstance(data, str):
        data = data.encode()
    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    with cursor.cursor.copy(sql) as cp:
        for start in range(0, len(data), COPY_CHUNK):
            cp.write(data[start : start + COPY_CHUNK])


def insert_many(cursor, model_or_table, columns: Sequence[str], rows: Sequence[Sequence]) -> None:
    """One parametrised INSERT, executed for each row (executemany): any database."""
    marks = ", ".join(["%s"] * len(columns))
    table = table_of(model_or_table)
    cursor.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def bulk_insert(
    cursor,
    model_or_table,
    columns: Sequence[str],
    rows: Sequence[Sequence],
    *,
    pg_types: Sequence[str] | None = None,
    adapt_datetimes: bool = False,
) -> int:
    """Insert `rows` (values in the order of `columns`) into the model's table; returns the
    number of rows. `cursor` None: a cursor of the default connection, closed afterwards.

    PostgreSQL: COPY (the fastest way in), or, with `pg_types` (one SQL type per column), one
    INSERT … SELECT over unnest(arrays): a single statement, for a few hundred rows that a
    COPY would not pay off. SQLite: executemany. `adapt_datetimes` stores datetimes there as
    Django's DateTimeField does (naive UTC) rather than through sqlite3's adapter."""
    if not rows:
        return 0
    if cursor is None:
        with connection.cursor() as cur:
            return bulk_insert(
                cur,
                model_or_table,
                columns,
                rows,
                pg_types=pg_types,
                adapt_datetimes=adapt_datetimes,
            )
    table = table_of(model_or_table)
    if is_postgresql(cursor.db):
        if pg_types is None:
            copy_in(cursor, table, columns, copy_text(rows))
        else:
            arrays = ", ".join(f"%s::{t}[]" for t in pg_types)
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM unnest({arrays})",
                [list(col) for col in zip(*rows, strict=True)],
            )
        return len(rows)
    if adapt_datetimes:
        adapt = cursor.db.ops.adapt_datetimefield_value
        rows = [tuple(adapt(v) if isinstance(v, datetime) else v for v in r) for r in rows]
    insert_many(cursor, table, columns, rows)
    return len(rows)


# --- id reservation ------------------------------------------------------------------------------


def reserve_ids(model: type[models.Model], n: int, cursor=None) -> list[int]:
    """`n` increasing primary keys for rows of `model` the caller is about to insert with
    explicit ids (COPY cannot return the ids it made).

    PostgreSQL: taken from the table's sequence, which is not transactional: they stay ours
    whichever connection writes the rows, and a rolled-back insert leaves a gap, as any does.
    SQLite: the ids after the largest one; only safe inside a transaction holding the write
    lock (the settings make transactions IMMEDIATE) that then inserts them."""
    if n <= 0:
        return []
    if cursor is None:
        with connection.cursor() as cur:
            return reserve_ids(model, n, cur)
    table, pk = model._meta.db_table, model._meta.pk.column
    if is_postgresql(cursor.db):
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [table, pk, n],
        )
        return [r[0] for r in cursor.fetchall()]
    cursor.execute(f'SELECT COALESCE(MAX("{pk}"), 0) FROM {table}')
    start = cursor.fetchone()[0] + 1
    return list(range(start, start + n))


# --- id lists and updates from values ----------------------------------------------------------


def id_in(column_sql: str, ids: Sequence[int]) -> tuple[str, list]:
    """A WHERE condition `column_sql` in `ids`, and its parameters. PostgreSQL: `= ANY(%s)`,
    one array parameter, cheap to bind and plan whatever the number of ids; elsewhere an
    IN list (the caller keeps it under SQLite's parameter limit). `column_sql` is quoted by
    the caller as it needs. An empty `ids` matches nothing on both."""
    ids = list(ids)
    if is_postgresql():
        return f"{column_sql} = ANY(%s)", [ids]
    if not ids:
        return "1 = 0", []
    return f"{column_sql} IN ({', '.join(['%s'] * len(ids))})", ids


def values_sql(casts: Sequence[str | None], n: int) -> str:
    """Placeholders for `n` rows of a VALUES list, each column cast to its SQL type when one is
    given (the types of a VALUES list come from its values: a NULL or a text parameter would
    otherwise not compare with a bigint or write into a jsonb column)."""
    one = ", ".join("%s" if c is None else f"%s::{c}" for c in casts)
    return ", ".join([f"({one})"] * n)


def update_from_values(
    cursor,
    model_or_table,
    columns: Sequence[str],
    rows: Sequence[Sequence],
    *,
    casts: Sequence[str | None] | None = None,
    same: dict | None = None,
    key: str = "id",
) -> None:
    """Set `columns` row by row: each row holds their values, then the `key` of the row to
    change; `same` sets columns to one value for every row (their values as Django adapts
    them). PostgreSQL: UPDATE … FROM (VALUES …), one statement per UPDATE_CHUNK rows, typed by
    `casts` (one per column then key); elsewhere executemany."""
    if not rows:
        return
    table = table_of(model_or_table)
    same = same or {}
    fixed = [f"{c} = %s" for c in same]
    if is_postgresql(cursor.db):
        sets = ", ".join([f"{c} = v.{c}" for c in columns] + fixed)
        names = ", ".join([*columns, key])
        casts = casts or [None] * (len(columns) + 1)
        for start in range(0, len(rows), UPDATE_CHUNK):
            chunk = rows[start : start + UPDATE_CHUNK]
            cursor.execute(
                f"UPDATE {table} t SET {sets} FROM (VALUES {values_sql(casts, len(chunk))}) "
                f"AS v({names}) WHERE t.{key} = v.{key}",
                [*same.values(), *[x for row in chunk for x in row]],
            )
        return
    sets = ", ".join([f"{c} = %s" for c in columns] + fixed)
    tail = list(same.values())
    cursor.executemany(
        f"UPDATE {table} SET {sets} WHERE {key} = %s",
        [(*row[:-1], *tail, row[-1]) for row in rows],
    )


# --- advisory locks ------------------------------------------------------------------------------


def advisory_key(name: str) -> int:
    """A stable lock key for a name (a positive 31-bit number: any PostgreSQL bigint)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def _key(key: int | str) -> int:
    return advisory_key(key) if isinstance(key, str) else key


def try_advisory_lock(key: int | str, conn=None) -> bool:
    """Take the session advisory lock `key` (a name or a number) if nobody holds it; whether we
    now hold it. It dies with the session, so a crashed process never leaves it behind.
    SQLite has no such lock and one writer at a time: always True there."""
    conn = conn or connection
    if not is_postgresql(conn):
        return True
    with conn.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s)", [_key(key)])
        return bool(cur.fetchone()[0])


def advisory_unlock(key: int | str, conn=None) -> None:
    """Release a session advisory lock taken by this session (a no-op on SQLite)."""
    conn = conn or connection
    if is_postgresql(conn):
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s)", [_key(key)])


@contextmanager
def advisory_lock(key: int | str, conn=None) -> Iterator[None]:
    """Hold the session advisory lock `key` for the block, waiting for it if another session
    has it (a no-op on SQLite)."""
    conn = conn or connection
    if is_postgresql(conn):
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
