"""Parity of config.db: each database trick gives the same result on SQLite and PostgreSQL.

The suite runs on SQLite by default and on PostgreSQL with DATABASE_URL; these tests assert
concrete results, so passing on both is the parity. CycleRun is the guinea pig: a plain table
with text, JSON, float, nullable and datetime columns and no foreign key.
"""

from datetime import UTC, datetime

import pytest
from django.db import connection

from config import db
from config.models import CycleRun

AT = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
# Everything COPY's text format must escape, plus non-ASCII text (PostgreSQL refuses NUL).
TRICKY = [
    "tab\there",
    "line\nbreak",
    "carriage\rreturn",
    "back\\slash \\N \\t",
    "ünïcødé – 漢字 🚀",
    "",
]
COLUMNS = ["kind", "status", "started", "finished", "counts", "error", "real_seconds", "host"]


def _rows(texts, kind="parity"):
    return [
        (kind, "success", AT, None, f'{{"n": {i}}}', text, 1.5 * i, f"h{i}")
        for i, text in enumerate(texts)
    ]


def _stored(kind="parity"):
    return list(
        CycleRun.objects.filter(kind=kind)
        .order_by("host")
        .values_list("error", "counts", "started", "finished", "real_seconds", "host")
    )


def _expected(texts):
    return [(t, {"n": i}, AT, None, 1.5 * i, f"h{i}") for i, t in enumerate(texts)]


def test_table_names_come_from_the_models():
    assert db.table_of(CycleRun) == CycleRun._meta.db_table
    assert db.table_of("some_table") == "some_table"


def test_copy_escape_escapes_backslashes_tabs_newlines_and_carriage_returns():
    assert db.copy_escape("a\tb\nc\rd\\e") == "a\\tb\\nc\\rd\\\\e"
    assert db.copy_escape("ünïcødé") == "ünïcødé"
    assert db.copy_escape(42) == "42"


def test_copy_text_writes_nulls_iso_datetimes_and_one_line_per_row():
    text = db.copy_text([(1, None, AT, "x\ty"), (2, "", AT.date(), "\\")])
    assert text == (f"1\t\\N\t{AT.isoformat()}\tx\\ty\n" + f"2\t\t{AT.date().isoformat()}\t\\\\\n")


@pytest.mark.django_db
def test_bulk_insert_stores_tricky_text_exactly_as_given():
    with connection.cursor() as cur:
        assert db.bulk_insert(cur, CycleRun, COLUMNS, _rows(TRICKY)) == len(TRICKY)
    assert _stored() == _expected(TRICKY)


@pytest.mark.django_db
def test_bulk_insert_without_a_cursor_opens_its_own():
    assert db.bulk_insert(None, CycleRun, COLUMNS, _rows(TRICKY[:2])) == 2
    assert _stored() == _expected(TRICKY[:2])


@pytest.mark.django_db
def test_bulk_insert_over_typed_arrays_stores_the_same_rows():
    types = ["text", "text", "timestamptz", "timestamptz", "jsonb", "text", "float8", "text"]
    n = db.bulk_insert(None, CycleRun, COLUMNS, _rows(TRICKY), pg_types=types, adapt_datetimes=True)
    assert n == len(TRICKY)
    assert _stored() == _expected(TRICKY)


@pytest.mark.django_db
def test_bulk_insert_of_no_rows_writes_nothing():
    assert db.bulk_insert(None, CycleRun, COLUMNS, []) == 0
    assert not CycleRun.objects.exists()


@pytest.mark.django_db
def test_insert_many_inserts_each_row_with_one_statement():
    with connection.cursor() as cur:
        db.insert_many(cur, CycleRun, COLUMNS, _rows(["a", "b\tc"]))
    assert _stored() == _expected(["a", "b\tc"])


@pytest.mark.django_db
def test_reserved_ids_are_distinct_increasing_and_never_handed_out_again():
    CycleRun.objects.create(kind="before", started=AT, status="success")
    with connection.cursor() as cur:
        ids = db.reserve_ids(CycleRun, 5, cur)
        assert ids == sorted(set(ids)) and len(ids) == 5
        assert ids[0] > CycleRun.objects.get(kind="before").pk
        db.bulk_insert(
            cur,
            CycleRun,
            ["id", *COLUMNS],
            [(i, *r) for i, r in zip(ids, _rows("abcde"), strict=True)],
        )
    later = CycleRun.objects.create(kind="after", started=AT, status="success")
    assert later.pk > max(ids)
    assert sorted(CycleRun.objects.filter(kind="parity").values_list("pk", flat=True)) == ids
    assert db.reserve_ids(CycleRun, 0) == []


@pytest.mark.django_db
def test_a_second_reservation_follows_the_first_once_its_rows_are_written():
    first = db.reserve_ids(CycleRun, 3)
    db.bulk_insert(
        None,
        CycleRun,
        ["id", *COLUMNS],
        [(i, *r) for i, r in zip(first, _rows("abc"), strict=True)],
    )
    second = db.reserve_ids(CycleRun, 3)
    assert min(second) > max(first)


@pytest.mark.django_db
def test_id_in_selects_exactly_the_listed_ids_and_nothing_for_an_empty_list():
    runs = [CycleRun.objects.create(kind=f"k{i}", started=AT, status="success") for i in range(4)]
    wanted = [runs[0].pk, runs[2].pk, 10**9]
    table = CycleRun._meta.db_table
    with connection.cursor() as cur:
        where, params = db.id_in('"id"', wanted)
        cur.execute(f"SELECT id FROM {table} WHERE {where} ORDER BY id", params)
        assert [r[0] for r in cur.fetchall()] == [runs[0].pk, runs[2].pk]
        where, params = db.id_in('"id"', [])
        cur.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", params)
        assert cur.fetchone()[0] == 0


def test_values_sql_casts_the_columns_that_name_a_type():
    assert db.values_sql([None, "bigint"], 2) == "(%s, %s::bigint), (%s, %s::bigint)"


@pytest.mark.django_db
def test_update_from_values_sets_each_row_its_own_values_and_the_shared_ones():
    runs = [CycleRun.objects.create(kind=f"u{i}", started=AT, status="running") for i in range(3)]
    finished = connection.ops.adapt_datetimefield_value(AT)
    rows = [("failed", "tab\there", 2.5, runs[0].pk), ("success", "ünï\n", None, runs[2].pk)]
    with connection.cursor() as cur:
        db.update_from_values(
            cur,
            CycleRun,
            ["status", "error", "real_seconds"],
            rows,
            casts=[None, None, "double precision", "bigint"],
            same={"finished": finished},
        )
    got = {
        r.kind: (r.status, r.error, r.real_seconds, r.finished)
        for r in CycleRun.objects.order_by("kind")
    }
    assert got == {
        "u0": ("failed", "tab\there", 2.5, AT),
        "u1": ("running", "", None, None),
        "u2": ("success", "ünï\n", None, AT),
    }


@pytest.mark.django_db
def test_update_from_values_of_more_rows_than_one_statement_holds_updates_them_all(monkeypatch):
    monkeypatch.setattr(db, "UPDATE_CHUNK", 2)
    runs = [CycleRun.objects.create(kind=f"c{i}", started=AT, status="running") for i in range(5)]
    with connection.cursor() as cur:
        db.update_from_values(cur, CycleRun, ["host"], [(f"h{r.pk}", r.pk) for r in runs])
    assert all(r.host == f"h{r.pk}" for r in CycleRun.objects.all())


def test_advisory_keys_are_stable_positive_31_bit_numbers():
    # The deploy command's key before config.db existed: hosts of two versions still agree.
    assert db.advisory_key("gridwms-deploy") == 553683366
    assert 0 <= db.advisory_key("gridwms-cycle:x") < 2**31


@pytest.fixture
def other_session():
    """A second connection to the same database: another process, as far as locks go."""
    other = connection.copy()
    yield other
    other.close()


@pytest.mark.django_db
def test_an_advisory_lock_excludes_a_second_session_on_postgresql_only(other_session):
    postgresql = connection.vendor == "postgresql"
    assert db.try_advisory_lock("gridwms-test-lock")
    try:
        # SQLite has no such locks (its writes are serialised): the cycles take it as held.
        assert db.try_advisory_lock("gridwms-test-lock", other_session) is not postgresql
    finally:
        db.advisory_unlock("gridwms-test-lock")
    assert db.try_advisory_lock("gridwms-test-lock", other_session)
    db.advisory_unlock("gridwms-test-lock", other_session)


@pytest.mark.django_db
def test_the_advisory_lock_block_holds_the_lock_and_releases_it_on_the_way_out(other_session):
    postgresql = connection.vendor == "postgresql"
    key = db.advisory_key("gridwms-test-block")
    with pytest.raises(RuntimeError), db.advisory_lock(key):
        assert db.try_advisory_lock(key, other_session) is not postgresql
        raise RuntimeError("the block failed: the lock is released all the same")
    assert db.try_advisory_lock(key, other_session)
    db.advisory_unlock(key, other_session)
