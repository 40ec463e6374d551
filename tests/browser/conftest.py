"""Headless Chromium (Debian's) driven by Playwright against the live test server, or with
BROWSER_SERVER=granian (or gunicorn) against the production web server: `scripts/serve.sh web`
as `make serve` runs it (DEBUG off, the static files collected and served from their manifest
by whitenoise) on the test database. That server keeps the suite's own settings
(GRIDWMS_TESTING=1: the users' test password hasher; the suite's cache lifetimes from the
environment, conftest.suite_environment; Q_SYNC=1: cycles run in the request that asks for
them), so the tests read the same as against the live server. .ci/run runs them this way.

Every page a test opens is watched: a console error or any response with status >= 400 fails
the test. Screenshots of the pages land in test-artifacts/.
"""

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

# Playwright's sync API runs an event loop in the test thread; the ORM calls in these tests
# are plain synchronous ones.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SERVERS = ("live", "granian", "gunicorn")
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: `make install` should have installed it")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class WatchedPage:
    def __init__(self, page, base_url):
        self.page = page
        self.base_url = base_url
        self.problems: list[str] = []
        page.on(
            "console",
            lambda msg: msg.type == "error" and self.problems.append(f"console: {msg.text}"),
        )
        page.on("pageerror", lambda exc: self.problems.append(f"page error: {exc}"))
        page.on(
            "response",
            lambda r: (
                r.status >= 400
                and not getattr(self, "expect_error", False)
                and self.problems.append(f"{r.status} {r.url}")
            ),
        )

    def goto(self, path):
        response = self.page.goto(self.base_url + path)
        self.page.wait_for_load_state("load")
        return response

    def login(self, username, password):
        self.goto("/login/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", password)
        self.page.click("button[type=submit]")
        self.page.wait_for_url(self.base_url + "/")

    def draw_charts(self):
        """Bring every chart of the page into view in turn (static/js/gridwms.js draws a chart
        only when it comes near the view), wait until all are drawn, and go back to the top."""
        charts = self.page.locator(".plotly-graph-div")
        for i in range(charts.count()):
            charts.nth(i).scroll_into_view_if_needed()
        self.page.wait_for_function(
            "Array.from(document.querySelectorAll('.plotly-graph-div'))"
            ".every(d => d.querySelector('.main-svg'))"
        )
        self.page.evaluate("window.scrollTo(0, 0)")

    def screenshot(self, name):
        """A full-page screenshot kept as an artifact for a person to look at. Chromium now
        and then cannot capture a page while it still lays out (a chart drawn as it scrolls
        into view): once more, then the window alone; an artifact never fails a test."""
        from playwright.sync_api import Error as PlaywrightError

        ARTIFACTS.mkdir(exist_ok=True)
        path = str(ARTIFACTS / f"{name}.png")
        for full_page in (True, True, False):
            try:
                self.page.screenshot(path=path, full_page=full_page)
                return
            except PlaywrightError:
                self.page.wait_for_timeout(500)


def _database_url(db: dict) -> str:
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    host = quote(db["HOST"] or "127.0.0.1", safe="")  # a Unix socket's directory, or a name
    return f"postgres://{auth}@{host}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture(scope="session")
def production_server(django_db_setup, tmp_path_factory):
    """The base URL of the production web server on the test database, or None (live)."""
    kind = os.environ.get("BROWSER_SERVER", "live")
    if kind not in SERVERS:
        pytest.fail(f"BROWSER_SERVER={kind}: one of {', '.join(SERVERS)}")
    if kind == "live":
        yield None
        return
    from django.db import connection

    tmp = tmp_path_factory.mktemp(f"browser-{kind}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_"))}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.update(
        GRIDWMS_TESTING="1",
        Q_SYNC="1",
        SERVE_MIGRATE="0",  # the test database is migrated and flushed by the suite
        SECRET_KEY="browser-tests-" + "s3cr3t" * 10,
        DATABASE_URL=_database_url(connection.settings_dict),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        STATIC_ROOT=str(tmp / "static"),
        SANDBOX_ROOT=str(tmp / "sandboxes"),  # the jobs' files stay out of the checkout
        WEB_SERVER=kind,
        WEB_WORKERS="1",
        WEB_THREADS="4",
        WEB_ACCESS_LOG="",
        HOST="127.0.0.1",
        PORT=str(port),
    )
    connection.close()  # the server's connections and the suite's flushes share the database
    log = open(tmp / "serve.log", "wb")
    process = subprocess.Popen(
        ["bash", "scripts/serve.sh", "web"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, (tmp / "serve.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(base + "/login/", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, (tmp / "serve.log").read_text()[-3000:]
            time.sleep(0.3)
        yield base
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


@pytest.fixture
def page(browser, production_server, request, transactional_db):
    base = production_server or request.getfixturevalue("live_server").url
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    watched = WatchedPage(context.new_page(), base)
    yield watched
    context.close()
    assert watched.problems == [], "\n".join(watched.problems)
