"""core.db's bulk tools store and find exactly what they are given. CycleRun is the guinea
pig: a plain table with text, JSON, float, nullable and datetime columns and no foreign key.
"""

from datetime import UTC, datetime

import pytest
from django.db import connection

from core import db
from core.models import CycleRun

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
    n = db.bulk_insert(None, CycleRun, COLUMNS, _rows(TRICKY), pg_types=types)
    assert n == len(TRICKY)
    assert _stored() == _expected(TRICKY)


@pytest.mark.django_db
def test_bulk_insert_of_no_rows_writes_nothing():
    assert db.bulk_insert(None, CycleRun, COLUMNS, []) == 0
    assert not CycleRun.objects.exists()


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


def test_advisory_keys_are_stable_positive_31_bit_numbers():
    # The deploy command's key before core.db existed: hosts of two versions still agree.
    assert db.advisory_key("gridwms-deploy") == 553683366
    assert 0 <= db.advisory_key("gridwms-cycle:x") < 2**31


@pytest.fixture
def other_session():
    """A second connection to the same database: another process, as far as locks go."""
    other = connection.copy()
    yield other
    other.close()


@pytest.mark.django_db
def test_an_advisory_lock_excludes_a_second_session_until_released(other_session):
    assert db.try_advisory_lock("gridwms-test-lock")
    try:
        assert not db.try_advisory_lock("gridwms-test-lock", other_session)
    finally:
        db.advisory_unlock("gridwms-test-lock")
    assert db.try_advisory_lock("gridwms-test-lock", other_session)
    db.advisory_unlock("gridwms-test-lock", other_session)


@pytest.mark.django_db
def test_the_advisory_lock_block_holds_the_lock_and_releases_it_on_the_way_out(other_session):
    key = db.advisory_key("gridwms-test-block")
    with pytest.raises(RuntimeError), db.advisory_lock(key):
        assert not db.try_advisory_lock(key, other_session)
        raise RuntimeError("the block failed: the lock is released all the same")
    assert db.try_advisory_lock(key, other_session)
    db.advisory_unlock(key, other_session)
