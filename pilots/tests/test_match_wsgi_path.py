"""The pilots' short path (api/pilots/wsgi.py) answers as the DRF view does, and hands every
other request to Django."""

import io
import json

import pytest
from django.core import signals
from django.db import close_old_connections
from rest_framework.authtoken.models import Token

from gridwms import wsgi
from matcher.models import Job, JobStatus

URL = "/api/v1/match/"
CERN = {"site": "LCG.CERN.ch", "grid_ce": "ce503.cern.ch", "cpu_time": 86400}


@pytest.fixture(autouse=True)
def _keep_the_test_transaction():
    """As Django's test client does: requests must not close the test's connection."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def pilot_token(users):
    return Token.objects.get_or_create(user=users["pilot"])[0].key


def send(app, body, token=None, method="POST", content_type="application/json", **extra):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": URL,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "CONTENT_TYPE": content_type,
        "CONTENT_LENGTH": str(len(raw)),
        "wsgi.input": io.BytesIO(raw),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
        **extra,
    }
    if token:
        environ["HTTP_AUTHORIZATION"] = f"Token {token}"
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen["status"], seen["headers"] = status, dict(headers)

    chunks = app(environ, start_response)
    content = b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    return int(seen["status"][:3]), seen["headers"], content


@pytest.fixture
def django_calls(monkeypatch):
    """Counts the requests the short path hands to Django."""
    calls = []
    real = wsgi.application.django

    def counted(environ, start_response):
        calls.append(environ["PATH_INFO"])
        return real(environ, start_response)

    monkeypatch.setattr(wsgi.application, "django", counted)
    return calls


def test_a_match_takes_the_short_path_and_answers_as_the_drf_view(
    submit, pilot_token, django_calls
):
    first = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"], user_priority=4)
    second = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"], user_priority=4)
    short = send(wsgi.application, {**CERN, "pilot_reference": "a/1"}, pilot_token)
    assert django_calls == []  # answered without Django's middleware and DRF
    full = send(wsgi.django_application, {**CERN, "pilot_reference": "a/2"}, pilot_token)
    assert short[0] == full[0] == 200
    a, b = json.loads(short[2]), json.loads(full[2])
    assert {a["id"], b["id"]} == {first.pk, second.pk}
    assert (a["pilot_reference"], b["pilot_reference"]) == ("a/1", "a/2")
    same = {"id": 0, "pilot_reference": ""}
    assert a.keys() == b.keys() and {**a, **same} == {**b, **same}
    assert short[1] == {**full[1], "Content-Length": short[1]["Content-Length"]}
    job = Job.objects.get(pk=a["id"])
    assert (job.status, job.pilot_reference) == (JobStatus.SENT, "a/1")
    assert (job.pilot.reference, job.pilot.credential_user.username) == ("a/1", "pilot")
    assert [h.to_status for h in job.history.all()] == ["activated", "sent"]


def test_nothing_to_match_answers_204_on_the_short_path_as_on_the_drf_view(
    world, pilot_token, django_calls
):
    short = send(wsgi.application, CERN, pilot_token)
    full = send(wsgi.django_application, CERN, pilot_token)
    assert short[0] == full[0] == 204 and short[2] == full[2] == b""
    assert django_calls == []
    assert short[1] == {k: v for k, v in full[1].items() if k != "Content-Length"}


@pytest.mark.parametrize(
    "case",
    [
        "bad cpu_time",
        "NUL in platform",
        "unknown field",
        "unknown token",
        "no token",
        "not json",
        "form body",
        "nested",
        "GET",
        "unknown host",
    ],
)
def test_anything_but_the_common_case_is_answered_by_django_exactly_as_without_the_short_path(
    world, pilot_token, django_calls, case
):
    body, token, kwargs = dict(CERN), pilot_token, {}
    if case == "bad cpu_time":
        body["cpu_time"] = -1
    elif case == "NUL in platform":
        body["platform"] = "x86_64\x00-el9"
    elif case == "unknown field":
        body["colour"] = "blue"
    elif case == "unknown token":
        token = "0" * 40
    elif case == "no token":
        token = None
    elif case == "not json":
        body = b'{"site": "LCG.CERN.ch",'
    elif case == "form body":
        body, kwargs = b"site=LCG.CERN.ch&cpu_time=100", {"content_type": "text/plain"}
    elif case == "nested":
        body = b'{"tag": ' + b"[" * 100 + b"]" * 100 + b"}"
    elif case == "GET":
        kwargs = {"method": "GET"}
    elif case == "unknown host":
        kwargs = {"HTTP_HOST": "evil.example.org"}
    short = send(wsgi.application, body, token, **kwargs)
    full = send(wsgi.django_application, body, token, **kwargs)
    assert short[0] >= 400 and django_calls == [URL]
    assert short == full
