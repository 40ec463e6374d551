"""Headless Chromium (Debian's) driven by Playwright against the live test server.

Every page a test opens is watched: a console error or any response with status >= 400 fails
the test. Screenshots of the pages land in test-artifacts/.
"""

import os
import shutil
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in the test thread; the ORM calls in these tests
# are plain synchronous ones.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
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

    def screenshot(self, name):
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.fixture
def page(browser, live_server, transactional_db):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    watched = WatchedPage(context.new_page(), live_server.url)
    yield watched
    context.close()
    assert watched.problems == [], "\n".join(watched.problems)
