"""PostgreSQL ending the server's session mid-request (an administrator's pg_terminate_backend,
a restart): every path answers 503 with Retry-After, whether the failure surfaces on the
matcher's raw psycopg cursor (unwrapped AdminShutdown, SQLSTATE 57P01) or through Django's
ORM. Which errors count as a lost connection is one test, over SQLSTATEs, for both kinds."""

import json

import psycopg
import psycopg.errors
import pytest
from django.conf import settings
from django.db import IntegrityError, OperationalError, connection
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.db import connection_failure
from core.tests.test_database_unavailable import _send_match
from web.core.error_pages import UNAVAILABLE

RESOURCE = {
    "site": "LCG.CERN.ch",
    "grid_ce": "ce503.cern.ch",
    "cpu_time": 86400,
    "platform": ["x86_64-el9"],
    "pilot_reference": "p-lost",
}


def _terminate(pid: int) -> None:
    """What an operator does: end that backend from another session, and wait until it is gone."""
    params = connection.get_connection_params()
    keys = ("dbname", "user", "password", "host", "port")
    conninfo = {k: params[k] for k in keys if params.get(k)}
    with psycopg.connect(autocommit=True, **conninfo) as other:
        ended = other.execute("SELECT pg_terminate_backend(%s, 10000)", [pid]).fetchone()[0]
    assert ended


@pytest.fixture
def postgresql(transactional_db):
    yield
    connection.close()  # the terminated session: the next test connects anew


@pytest.fixture
def terminated_mid_claim(postgresql, monkeypatch):
    """The server's session is ended when the matcher opens its raw cursor to claim."""
    from matcher import claims

    opened = claims._prepared_cursor
    seen = []

    def terminate_then_open():
        connection.ensure_connection()
        _terminate(connection.connection.info.backend_pid)
        seen.append(True)
        return opened()

    monkeypatch.setattr(claims, "_prepared_cursor", terminate_then_open)
    return seen


@pytest.fixture
def waiting_job(users, submit):
    return submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])


def _assert_503(status: int, headers, content: bytes) -> None:
    assert status == 503, content
    assert headers["Retry-After"] == str(settings.DB_RETRY_AFTER)
    assert json.loads(content) == {"detail": UNAVAILABLE}


def test_a_pilots_match_on_the_short_path_answers_503_when_the_session_is_ended_mid_claim(
    users, waiting_job, terminated_mid_claim
):
    token = Token.objects.get_or_create(user=users["pilot"])[0].key
    status, headers, content = _send_match(RESOURCE, token)
    assert terminated_mid_claim, "the claim never reached its raw cursor"
    _assert_503(status, headers, content)


def test_a_pilots_match_through_django_answers_503_when_the_session_is_ended_mid_claim(
    users, waiting_job, terminated_mid_claim
):
    pilot = APIClient(raise_request_exception=False)
    pilot.force_authenticate(users["pilot"])
    response = pilot.post("/api/v1/match/", RESOURCE, format="json")
    assert terminated_mid_claim, "the claim never reached its raw cursor"
    _assert_503(response.status_code, response, response.content)


def test_an_api_call_through_the_orm_answers_503_when_its_session_was_ended(users, postgresql):
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(users["alice"])
    connection.ensure_connection()
    _terminate(connection.connection.info.backend_pid)
    response = client.get("/api/v1/jobs/")
    _assert_503(response.status_code, response, response.content)


def test_a_page_answers_the_503_page_when_its_session_was_ended(users, postgresql):
    browser = Client(raise_request_exception=False)
    browser.force_login(users["alice"])
    connection.ensure_connection()
    _terminate(connection.connection.info.backend_pid)
    response = browser.get("/jobs/")
    assert response.status_code == 503
    assert response["Retry-After"] == str(settings.DB_RETRY_AFTER)
    assert "Database unavailable" in response.content.decode()


# --- the one classifier -----------------------------------------------------------------------

CONNECTION_STATES = ["08000", "08003", "08006", "57P01", "57P02", "57P03"]
STATEMENT_STATES = ["23505", "40001", "40P01", "57014", "22001", "42P01"]


def _as_django_raises(driver_error, django_class):
    try:
        try:
            raise driver_error
        except psycopg.Error as exc:
            raise django_class(*exc.args) from exc
    except django_class as exc:
        return exc


@pytest.mark.parametrize("state", CONNECTION_STATES + STATEMENT_STATES)
def test_only_connection_sqlstates_count_as_the_database_unavailable_raw_or_from_django(state):
    raw = psycopg.errors.lookup(state)(f"SQLSTATE {state}")
    assert raw.sqlstate == state
    lost = state in CONNECTION_STATES
    assert connection_failure(raw) is lost  # as the matcher's raw cursor raises it
    django_class = IntegrityError if state == "23505" else OperationalError
    assert connection_failure(_as_django_raises(raw, django_class)) is lost


def test_a_raw_client_side_connection_loss_counts_and_other_errors_do_not():
    assert connection_failure(psycopg.OperationalError("server closed the connection")) is True
    assert connection_failure(psycopg.InterfaceError("the cursor is closed")) is False
    assert connection_failure(psycopg.DataError("bad value")) is False
    assert connection_failure(ValueError("not the database's")) is False
    assert connection_failure(None) is False
