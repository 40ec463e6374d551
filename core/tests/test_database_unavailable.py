"""A database that refuses connections (down, full, unreachable, the pool exhausted) answers 503
with Retry-After: JSON under /api/ (the pilots' short path too), the site's framed page
otherwise, rendered without the database. A failing statement is not that: it stays a 500, so
that real bugs stay visible."""

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import psycopg.errors
import pytest
from django.conf import settings
from django.db import DataError, InterfaceError, OperationalError, connection, connections
from django.test import Client
from psycopg_pool import PoolTimeout
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.db import connection_failure
from web.core.error_pages import UNAVAILABLE

ROOT = Path(__file__).resolve().parents[2]
A_TOKEN = "Token " + "0" * 40
CERN = {"site": "LCG.CERN.ch", "grid_ce": "ce503.cern.ch", "cpu_time": 86400}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def database_refuses(monkeypatch, django_db_blocker):
    """Every new connection is refused, for real: PostgreSQL is asked on a port nothing listens
    on."""
    with django_db_blocker.unblock():
        connection.close()
        settings_dict = connection.settings_dict
        monkeypatch.setitem(settings_dict, "HOST", "127.0.0.1")
        monkeypatch.setitem(settings_dict, "PORT", str(_closed_port()))
        options = {k: v for k, v in settings_dict["OPTIONS"].items() if k != "pool"}
        monkeypatch.setitem(settings_dict, "OPTIONS", options)
        yield
        connection.close()


def _assert_api_503(response):
    assert response.status_code == 503
    assert response["Retry-After"] == str(settings.DB_RETRY_AFTER)
    assert response["Content-Type"].startswith("application/json")
    assert json.loads(response.content) == {"detail": UNAVAILABLE}


@pytest.mark.parametrize("credential", ["token", "session"])
def test_an_api_call_answers_503_json_with_retry_after_when_the_database_refuses(
    database_refuses, credential
):
    client = Client(raise_request_exception=False)
    if credential == "token":  # a pilot or a program
        response = client.get("/api/v1/jobs/", HTTP_AUTHORIZATION=A_TOKEN)
    else:  # a signed-in browser: its session is in the database
        client.cookies[settings.SESSION_COOKIE_NAME] = "s" * 32
        response = client.get("/api/v1/jobs/")
    _assert_api_503(response)


def test_a_page_answers_the_framed_503_page_with_retry_after_when_the_database_refuses(
    database_refuses,
):
    browser = Client(raise_request_exception=False)
    # A signed-in browser: the session (in the database) is read by middleware, before any view.
    browser.cookies[settings.SESSION_COOKIE_NAME] = "s" * 32
    response = browser.get("/jobs/")
    assert response.status_code == 503
    assert response["Retry-After"] == str(settings.DB_RETRY_AFTER)
    html = response.content.decode()
    assert "<title>Database unavailable · gridwms</title>" in html
    assert "css/gridwms" in html and 'class="brand"' in html  # the site's frame
    assert "<nav>" not in html  # no user menu: it would read the database
    assert "Traceback" not in html and "OperationalError" not in html


def test_signing_in_answers_the_503_page_not_a_server_error_when_the_database_refuses(
    database_refuses, client
):
    # The view fails (the user is looked up): answered by the middleware, not reported as a
    # server error (the test client would re-raise one).
    response = client.post("/login/", {"username": "alice", "password": "gridwms"})
    assert response.status_code == 503
    assert response["Retry-After"] == str(settings.DB_RETRY_AFTER)
    assert "Database unavailable" in response.content.decode()


def test_healthz_still_answers_its_own_503_naming_the_database_when_it_refuses(
    database_refuses, client
):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["failing"] == ["database"]


def _statement_fails(execute, sql, params, many, context):
    """A statement the server refuses on a healthy connection, as the driver raises it."""
    error = psycopg.errors.DeadlockDetected("deadlock detected")
    with context["connection"].wrap_database_errors:
        raise error


def test_a_failing_statement_still_answers_500_on_the_api_and_the_pages(users):
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(users["alice"])
    browser = Client(raise_request_exception=False)
    browser.force_login(users["alice"])
    with connection.execute_wrapper(_statement_fails):
        from_api = api.get("/api/v1/jobs/")
        page = browser.get("/jobs/")
    assert from_api.status_code == 500 and "Retry-After" not in from_api
    assert from_api.json()["detail"].startswith("Server error")
    assert page.status_code == 500 and "Retry-After" not in page
    assert "Server error" in page.content.decode()


# --- the pilots' short path (api/pilots/wsgi.py) ---------------------------------------------


def _send_match(body: dict, token: str):
    from gridwms import wsgi

    raw = json.dumps(body).encode()
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/api/v1/match/",
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Token {token}",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(raw)),
        "wsgi.input": io.BytesIO(raw),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen["status"], seen["headers"] = status, dict(headers)

    chunks = wsgi.application(environ, start_response)
    content = b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    return int(seen["status"][:3]), seen["headers"], content


def _assert_wsgi_503(answer):
    status, headers, content = answer
    assert status == 503
    assert headers["Retry-After"] == str(settings.DB_RETRY_AFTER)
    assert headers["Content-Type"].startswith("application/json")
    assert json.loads(content) == {"detail": UNAVAILABLE}


def test_a_pilots_match_answers_503_json_with_retry_after_when_the_database_refuses(
    database_refuses,
):
    _assert_wsgi_503(_send_match(CERN, "0" * 40))


@pytest.fixture
def _keep_the_test_transaction():
    """The short path sends request_started/finished itself: they must not close the test's
    connection (as Django's test client ensures for its requests)."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def test_a_pilots_match_answers_503_when_the_connection_is_lost_during_the_claim(
    users, monkeypatch, _keep_the_test_transaction
):
    from pilots import registry as pilot_registry

    def lost(*args, **kwargs):
        # What Django raises when PostgreSQL goes away under a statement (a restart).
        try:
            raise psycopg.OperationalError(
                "consuming input failed: server closed the connection unexpectedly"
            )
        except psycopg.OperationalError as exc:
            raise OperationalError(*exc.args) from exc

    monkeypatch.setattr(pilot_registry, "claim", lost)
    token = Token.objects.get_or_create(user=users["pilot"])[0].key
    _assert_wsgi_503(_send_match(CERN, token))


# --- which errors are the connection's --------------------------------------------------------


def _as_django_raises(driver_error, django_class):
    """The error as Django raises it from the driver's: its class of the same name, chained."""
    try:
        try:
            raise driver_error
        except Exception as exc:
            raise django_class(*exc.args) from exc
    except django_class as exc:
        return exc


@pytest.mark.parametrize(
    ("driver_error", "django_class", "unavailable"),
    [
        (
            psycopg.OperationalError("server closed the connection unexpectedly"),
            OperationalError,
            True,
        ),
        (psycopg.OperationalError("the connection is closed"), OperationalError, True),
        (PoolTimeout("couldn't get a connection after 5.00 sec"), OperationalError, True),
        (
            psycopg.errors.TooManyConnections("sorry, too many clients already"),
            OperationalError,
            True,
        ),
        (
            psycopg.errors.CannotConnectNow("the database system is starting up"),
            OperationalError,
            True,
        ),
        (psycopg.errors.AdminShutdown("terminating connection"), OperationalError, True),
        (psycopg.errors.DeadlockDetected("deadlock detected"), OperationalError, False),
        (psycopg.errors.SerializationFailure("could not serialize"), OperationalError, False),
        (psycopg.errors.QueryCanceled("statement timeout"), OperationalError, False),
        (psycopg.errors.StringDataRightTruncation("value too long"), DataError, False),
        (psycopg.InterfaceError("the cursor is closed"), InterfaceError, False),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else None,
)
def test_only_a_refused_or_lost_connection_counts_as_the_database_unavailable(
    driver_error, django_class, unavailable
):
    assert connection_failure(_as_django_raises(driver_error, django_class)) is unavailable


# --- the pool: bounded, and a quick 503 when exhausted ----------------------------------------


def test_the_pool_is_bounded_and_waits_as_the_environment_says():
    env = {
        **os.environ,
        "DEBUG": "1",
        "DATABASE_URL": "postgres://gridwms@db.example.org:5432/gridwms",
        "DB_POOL": "1",
        "DB_POOL_MIN_SIZE": "2",
        "DB_POOL_MAX_SIZE": "6",
        "DB_POOL_TIMEOUT": "1.5",
        "DB_CONNECT_TIMEOUT": "3",
    }
    script = (
        "import json; from gridwms import settings as s; "
        "print(json.dumps(s.DATABASES['default']['OPTIONS']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    options = json.loads(result.stdout)
    assert options["pool"] == {"min_size": 2, "max_size": 6, "timeout": 1.5}
    assert options["connect_timeout"] == 3


def test_a_request_finding_the_pool_exhausted_answers_503_after_the_pool_timeout(
    django_db_setup, django_db_blocker, monkeypatch
):
    with django_db_blocker.unblock():
        connection.close()
        pool = {"min_size": 1, "max_size": 1, "timeout": 0.5}
        options = {**connection.settings_dict["OPTIONS"], "pool": pool}
        monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
        monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
        monkeypatch.setattr(type(connections["default"]), "_connection_pools", {})
        held, release = threading.Event(), threading.Event()

        def hold_the_only_connection():
            try:
                connections["default"].ensure_connection()
                held.set()
                release.wait(30)
            finally:
                connections.close_all()  # back to the pool

        holder = threading.Thread(target=hold_the_only_connection)
        holder.start()
        try:
            assert held.wait(10)
            started = time.monotonic()
            client = Client(raise_request_exception=False)
            response = client.get("/api/v1/jobs/", HTTP_AUTHORIZATION=A_TOKEN)
            waited = time.monotonic() - started
        finally:
            release.set()
            holder.join(10)
            connection.close()
            connection.close_pool()
    _assert_api_503(response)
    assert 0.4 < waited < 5  # the pool's timeout, not a hang
