"""The pilots' short path (api/pilots/wsgi.py) answers a match request as Django's own chain does:
the same status and the same security headers, under production-like security settings.

Each case sends one request to PilotMatchPath and the same request to a Django handler without
it, both built inside the case's settings (Django's middleware reads them when the handler is
built). The case also says which path should answer: the short path, or Django behind it.
"""

import io
import json
import re
from dataclasses import dataclass, field

import pytest
from django.conf import settings
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from django.test import override_settings
from rest_framework.authtoken.models import Token

from api.pilots.wsgi import PATH, PilotMatchPath

HOST = "grid.example.org"
CERN = {"site": "LCG.CERN.ch", "grid_ce": "ce503.cern.ch", "cpu_time": 86400}
PROXY = ("HTTP_X_FORWARDED_PROTO", "https")
MIDDLEWARE = list(settings.MIDDLEWARE)
PRODUCTION = {
    "DEBUG": False,
    "ALLOWED_HOSTS": [HOST],
    "SECURE_HSTS_SECONDS": 31536000,
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
    "SECURE_HSTS_PRELOAD": True,
    "SECURE_CONTENT_TYPE_NOSNIFF": True,
    "SECURE_REFERRER_POLICY": "same-origin",
    "SECURE_CROSS_ORIGIN_OPENER_POLICY": "same-origin",
    "X_FRAME_OPTIONS": "SAMEORIGIN",  # not Django's default, so a DENY written by hand shows
    "SECURE_SSL_REDIRECT": False,
    "SECURE_PROXY_SSL_HEADER": None,
}
# What a browser or a proxy acts on, and what says why a request was refused.
COMPARED = (
    "Location",
    "Strict-Transport-Security",
    "X-Content-Type-Options",
    "Referrer-Policy",
    "Cross-Origin-Opener-Policy",
    "X-Frame-Options",
    "Content-Type",
    "Allow",
    "WWW-Authenticate",
    "Connection",
    "Retry-After",
)


@dataclass(frozen=True)
class Case:
    sentence: str
    status: int
    short_path: bool  # the short path answers it, not Django behind it
    settings: dict = field(default_factory=dict)
    environ: dict = field(default_factory=dict)
    method: str = "POST"
    token: str | None = "pilot"
    body_size: int = 0  # pad the body with JSON whitespace to this many bytes


CASES = [
    Case(
        "a pilot's match over https is answered 200 with HSTS",
        200,
        True,
        environ={"wsgi.url_scheme": "https"},
    ),
    Case("a pilot's match over plain http is answered 200 without HSTS", 200, True),
    Case(
        "a host not in ALLOWED_HOSTS is refused with 400",
        400,
        False,
        environ={"HTTP_HOST": "evil.example.org"},
    ),
    Case(
        "a forwarded host not in ALLOWED_HOSTS is refused with 400 when it is trusted",
        400,
        False,
        settings={"USE_X_FORWARDED_HOST": True},
        environ={"HTTP_X_FORWARDED_HOST": "evil.example.org"},
    ),
    Case(
        "a host not in ALLOWED_HOSTS goes to Django even in a chain without CommonMiddleware",
        200,  # nothing in that chain asks for the host of a match
        False,
        settings={"MIDDLEWARE": [m for m in MIDDLEWARE if not m.endswith(".CommonMiddleware")]},
        environ={"HTTP_HOST": "evil.example.org"},
    ),
    Case(
        "plain http is redirected to https when SECURE_SSL_REDIRECT is on",
        301,
        False,
        settings={"SECURE_SSL_REDIRECT": True},
    ),
    Case(
        "a path exempt from the SSL redirect is answered over plain http",
        200,
        True,
        settings={"SECURE_SSL_REDIRECT": True, "SECURE_REDIRECT_EXEMPT": [r"^api/v1/match/$"]},
    ),
    Case(
        "the proxy's https header is trusted when SECURE_PROXY_SSL_HEADER names it",
        200,
        True,
        settings={"SECURE_SSL_REDIRECT": True, "SECURE_PROXY_SSL_HEADER": PROXY},
        environ={"HTTP_X_FORWARDED_PROTO": "https"},
    ),
    Case(
        "the proxy's http header is redirected to https even on a TLS connection",
        301,
        False,
        settings={"SECURE_SSL_REDIRECT": True, "SECURE_PROXY_SSL_HEADER": PROXY},
        environ={"HTTP_X_FORWARDED_PROTO": "http", "wsgi.url_scheme": "https"},
    ),
    Case(
        "a TLS connection without the proxy's header carries HSTS as Django's does",
        200,
        True,
        settings={"SECURE_PROXY_SSL_HEADER": PROXY},
        environ={"wsgi.url_scheme": "https"},
    ),
    Case(
        "a body over REQUEST_MAX_BYTES is refused with 413",
        413,
        False,
        settings={"REQUEST_MAX_BYTES": 1024},
        body_size=2048,
    ),
    Case("a match without a token is refused with 401", 401, False, token=None),
    Case("a match with an unknown token is refused with 401", 401, False, token="0" * 40),
    Case("a GET of the match is refused with 405", 405, False, method="GET"),
    Case("a PUT of the match is refused with 405", 405, False, method="PUT"),
    Case(
        "a refused user agent is refused with 403",
        403,
        False,
        settings={"DISALLOWED_USER_AGENTS": [re.compile("BadPilot")]},
        environ={"HTTP_USER_AGENT": "BadPilot/1.0"},
    ),
    Case(
        "a referrer policy given as a list is sent as one header",
        200,
        True,
        settings={"SECURE_REFERRER_POLICY": ["same-origin", "strict-origin-when-cross-origin"]},
    ),
]


@pytest.fixture(autouse=True)
def _keep_the_test_transaction():
    """As Django's test client does: requests must not close the test's connection."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def environ_for(case: Case, token: str | None) -> dict:
    raw = json.dumps(CERN).encode()
    raw += b" " * max(0, case.body_size - len(raw))
    environ = {
        "REQUEST_METHOD": case.method,
        "PATH_INFO": PATH,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": HOST,
        "SERVER_PORT": "443",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "192.0.2.7",
        "HTTP_HOST": HOST,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(raw)),
        "wsgi.input": io.BytesIO(raw),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
        **case.environ,
    }
    if token:
        environ["HTTP_AUTHORIZATION"] = f"Token {token}"
    return environ


def send(app, environ) -> tuple[int, dict, bytes]:
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen["status"], seen["headers"] = status, dict(headers)

    chunks = app(environ, start_response)
    content = b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    return int(seen["status"][:3]), seen["headers"], content


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.sentence)
def test_the_short_path_answers_a_match_as_django_does(users, submit, case):
    for _ in range(2):  # one job for each path
        submit("alice", cpu_time=100, sites=["LCG.CERN.ch"], user_priority=4)
    pilot = Token.objects.get_or_create(user=users["pilot"])[0].key
    token = pilot if case.token == "pilot" else case.token
    with override_settings(**{**PRODUCTION, **case.settings}):
        django_only = WSGIHandler()
        handed_over = []
        behind = WSGIHandler()

        def django_behind(environ, start_response):
            handed_over.append(environ["PATH_INFO"])
            return behind(environ, start_response)

        short = send(PilotMatchPath(django_behind), environ_for(case, token))
        full = send(django_only, environ_for(case, token))

    assert (short[0], full[0]) == (case.status, case.status)
    assert {h: short[1].get(h) for h in COMPARED} == {h: full[1].get(h) for h in COMPARED}
    assert handed_over == ([] if case.short_path else [PATH])
    if case.status == 200:  # a job each, told the same way
        assert json.loads(short[2]).keys() == json.loads(full[2]).keys()
    else:
        assert short[2] == full[2]
    secure = case.environ.get("wsgi.url_scheme") == "https" or "https" in case.environ.get(
        "HTTP_X_FORWARDED_PROTO", ""
    )
    assert ("Strict-Transport-Security" in full[1]) == (secure and case.status == 200)
