"""`make run`'s web server (scripts/run_web.sh, as scripts/run.sh starts it) runs with DEBUG off:
a missing page is the site's own framed 404, not Django's debug page, and the static files are
still served from the checkout (nothing collected)."""

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.browser.conftest import _database_url

ROOT = Path(__file__).resolve().parents[1]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture
def make_run_web(db, tmp_path):
    """The base URL of run_web.sh on the test database (the suite's own variables left out:
    the server is the demo's)."""
    from django.db import connection

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "DJANGO_", "GRIDWMS_TESTING"))
        and k not in ("DEBUG", "STATIC_MANIFEST", "SECRET_KEY", "ALLOWED_HOSTS")
    }
    env.update(DATABASE_URL=_database_url(connection.settings_dict), SANDBOX_ROOT=str(tmp_path))
    log = open(tmp_path / "web.log", "wb")
    process = subprocess.Popen(
        ["bash", "scripts/run_web.sh", "127.0.0.1", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (tmp_path / "web.log").read_text()[-3000:]
            try:
                if _get(base + "/login/")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "web.log").read_text()[-3000:]
            time.sleep(0.3)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
        log.close()


def test_make_runs_web_server_shows_the_sites_own_404_and_serves_the_static_files(make_run_web):
    status, body = _get(make_run_web + "/no-such-page/")
    assert status == 404
    assert 'id="not-found"' in body and 'class="brand"' in body  # the framed page
    assert "DEBUG = True" not in body and "URLconf" not in body
    status, css = _get(make_run_web + "/static/css/gridwms.css")
    assert status == 200
    assert css == (ROOT / "static" / "css" / "gridwms.css").read_text()
