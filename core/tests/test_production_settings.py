"""Production mode (DEBUG=0): what it refuses, what `check --deploy` says, the error pages."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.http import HttpResponse
from django.test import override_settings
from django.urls import path

from tests._databases import scratch_database

ROOT = Path(__file__).resolve().parents[2]
SECRET = "a-production-secret-key-" + "k3y" * 20

# The documented production environment behind a TLS-terminating proxy
# (docs/operator-guide.md, Behind a TLS-terminating proxy).
PRODUCTION_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": SECRET,
    "DATABASE_URL": "postgres://gridwms@db.example.org:5432/gridwms",
    "ALLOWED_HOSTS": "gridwms.example.org",
    "CSRF_TRUSTED_ORIGINS": "https://gridwms.example.org",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SESSION_COOKIE_SECURE": "1",
    "CSRF_COOKIE_SECURE": "1",
}


def manage(*args, **env):
    clean = {k: v for k, v in os.environ.items() if k not in PRODUCTION_ENV}
    clean.pop("GRIDWMS_TESTING", None)
    clean.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # the browser tests set it in this process
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("missing", ["SECRET_KEY", "DATABASE_URL"])
def test_production_refuses_to_start_without_its_secret_key_or_database(missing):
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != missing}
    result = manage("check", **env)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # one line, no traceback
    assert missing in lines[0] and "production" in lines[0]


@pytest.mark.parametrize("name", ["TASKQUEUE_VIEW_REFRESH_SECONDS", "CONN_MAX_AGE"])
def test_a_setting_that_is_not_a_number_stops_the_start_with_one_line_naming_it(name):
    result = manage("check", **{**PRODUCTION_ENV, name: "one second"})
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no traceback
    assert name in lines[0] and "not a number" in lines[0]


def test_check_deploy_is_clean_with_the_documented_production_environment():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_names_what_a_plain_http_production_host_leaves_open():
    """Without the TLS settings the same check warns: the documented ones are what cleans it."""
    plain = {k: PRODUCTION_ENV[k] for k in ("DEBUG", "SECRET_KEY", "DATABASE_URL")}
    result = manage("check", "--deploy", "--fail-level", "WARNING", **plain)
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr + result.stdout


def test_an_unknown_page_is_the_projects_own_404_and_lists_no_url_patterns(client, users):
    client.force_login(users["alice"])
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "Not found" in body and "/no/such/page/" in body
    assert "URLconf" not in body and "api/v1/" not in body and "admin/" not in body


def test_an_unknown_api_path_answers_json_404(client):
    response = client.get("/api/v1/no-such-endpoint/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


def _broken(request):
    raise RuntimeError("the secret of the broken view")


def _fine(request):
    return HttpResponse("fine")


urlpatterns = [path("broken/", _broken), path("api/v1/broken/", _broken), path("", _fine)]
handler500 = "web.core.error_pages.server_error"


@override_settings(ROOT_URLCONF=__name__)
def test_a_server_error_is_the_projects_own_500_page_and_leaks_nothing(client):
    client.raise_request_exception = False
    response = client.get("/broken/")
    assert response.status_code == 500
    body = response.content.decode()
    assert "Server error" in body
    assert "secret of the broken view" not in body and "Traceback" not in body
    api = client.get("/api/v1/broken/")
    assert api.status_code == 500 and api.json()["detail"].startswith("Server error")
    assert "secret" not in api.content.decode()


def test_production_urls_load_before_collectstatic_has_run(tmp_path):
    """DEBUG=0 used to fail every request, the API's included: the URLconf asked the static
    manifest for the favicon's name when imported. Now the API answers whatever the manifest."""
    script = (
        "import django; django.setup();"
        "from django.test import Client;"
        "r = Client().get('/api/v1/jobs/');"
        "print(r.status_code)"
    )
    env = {
        k: v for k, v in os.environ.items() if k not in PRODUCTION_ENV and k != "GRIDWMS_TESTING"
    }
    env.update(
        DEBUG="0",
        SECRET_KEY=SECRET,
        DATABASE_URL="",  # below: an empty database of its own
        STATIC_ROOT=str(tmp_path / "never-collected"),
        DJANGO_SETTINGS_MODULE="gridwms.settings",
        ALLOWED_HOSTS="testserver",
    )
    with scratch_database("urls") as url:
        result = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env={**env, "DATABASE_URL": url},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "401"  # anonymous: the API's answer, not a 500
