"""The production server as an operator starts it: `make serve` (the web server with two workers
and the django-q2 cluster, DEBUG off, static files from collectstatic's manifest) in a process
group of its own, on an empty database of its own; then the user guide's API calls, the pages in
a real browser, health, metrics and logs through it, and a clean stop. Both web servers: granian
(the default) and gunicorn."""

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests._databases import scratch_database
from tests.browser.conftest import WatchedPage

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "gridwms"  # simulation.demo.USER_PASSWORD
pytestmark = pytest.mark.timeout(900)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None, token=None, form=False, headers=None):
    """One HTTP request as curl makes it: (status, headers, body bytes)."""
    data, hdrs = None, dict(headers or {})
    if token:
        hdrs["Authorization"] = f"Token {token}"
    if body is not None and form:
        data = urllib.parse.urlencode(body).encode()
    elif body is not None:
        data, hdrs["Content-Type"] = json.dumps(body).encode(), "application/json"
    request = urllib.request.Request(base + path, data=data, method=method, headers=hdrs)
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture(scope="module", params=["granian", "gunicorn"])
def server(request, tmp_path_factory):
    """WEB_SERVER: granian (the default) and gunicorn, each through every test here, each on an
    empty database of its own."""
    with scratch_database(f"production_{request.param}") as url:
        yield from _serve(request.param, url, tmp_path_factory)


def _serve(kind, database_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"production-{kind}")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRIDWMS_", "PYTEST_"))}
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set for Playwright's sake in this process
    env.update(
        DEBUG="0",
        SECRET_KEY="production-test-" + "s3cr3t" * 10,
        DATABASE_URL=database_url,
        STATIC_ROOT=str(tmp / "static"),
        WEB_WORKERS="2",
        WEB_THREADS="2",
        Q_WORKERS="1",
        LOG_FORMAT="json",
        WEB_ACCESS_LOG=str(tmp / "access.log"),
        WEB_SERVER=kind,
    )
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    manage = [str(ROOT / ".venv/bin/python"), "manage.py"]
    for args in (["migrate", "-v0"], ["demo", "--jobs", "40"]):
        subprocess.run(manage + args, cwd=ROOT, env=env, check=True, timeout=300)
    log = open(tmp / "serve.log", "wb")
    process = subprocess.Popen(
        ["make", "-s", "serve", "HOST=127.0.0.1", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    try:
        while True:
            assert process.poll() is None, (tmp / "serve.log").read_text()[-3000:]
            try:
                if call(base, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, (tmp / "serve.log").read_text()[-3000:]
            time.sleep(0.5)
        yield {"base": base, "tmp": tmp, "process": process, "name": kind}
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            pytest.fail("make serve did not stop within 60 s of SIGTERM")
        log.close()


def token_of(base, username, password=PASSWORD):
    body = {"username": username, "password": password}
    status, _, body = call(base, "POST", "/api/v1/auth/token/", body, form=True)
    assert status == 200, body
    return json.loads(body)["token"]


def test_the_readme_api_calls_work_against_the_production_server(server):
    base = server["base"]
    token = token_of(base, "alice")
    job = {"cpu_time": 3600, "sites": ["LCG.CERN.ch"], "tags": ["4Processors"], "user_priority": 3}
    status, _, body = call(base, "POST", "/api/v1/jobs/", job, token=token)
    assert status == 201, body
    created = json.loads(body)
    assert created["status"] == "activated" and created["task_queue"]
    status, _, body = call(
        base, "GET", "/api/v1/jobs/?status=activated&site=LCG.CERN.ch", token=token
    )
    assert status == 200 and created["id"] in [j["id"] for j in json.loads(body)["results"]]
    assert call(base, "GET", f"/api/v1/jobs/{created['id']}/", token=token)[0] == 200
    assert call(base, "GET", "/api/v1/task-queues/", token=token)[0] == 200

    pilot = token_of(base, "pilot")
    resource = {
        "site": "LCG.CERN.ch",
        "grid_ce": "ce503.cern.ch",
        "cpu_time": 172800,
        "platform": ["x86_64-el9"],
        "tag": ["MultiProcessor", "16GB"],
        "pilot_reference": "ce503/1",
    }
    status, _, body = call(base, "POST", "/api/v1/match/", resource, token=pilot)
    assert status in (200, 204), body
    if status == 200:
        assert json.loads(body)["site"] == "LCG.CERN.ch"


def test_health_answers_200_through_the_production_server(server):
    status, _, body = call(server["base"], "GET", "/healthz")
    report = json.loads(body)
    assert status == 200 and report == {"status": "ok", "failing": []}, report


def test_static_files_are_served_from_the_manifest_hashed_and_cached_for_a_year(server):
    base = server["base"]
    status, _, page = call(base, "GET", "/login/")
    assert status == 200
    css = re.search(rb'href="(/static/css/gridwms\.[0-9a-f]{12}\.css)"', page)
    assert css, page[:600]
    status, headers, _ = call(base, "GET", css.group(1).decode())
    assert status == 200
    assert "max-age=315360000" in headers["Cache-Control"]
    assert "immutable" in headers["Cache-Control"]
    _, gz, _ = call(base, "GET", css.group(1).decode(), headers={"Accept-Encoding": "gzip"})
    assert gz["Content-Encoding"] == "gzip"
    assert call(base, "GET", "/favicon.ico")[1]["Location"].startswith("/static/img/favicon.")


def test_the_production_servers_own_error_pages_leak_nothing(server):
    base = server["base"]
    status, _, body = call(base, "GET", "/api/v1/no-such-endpoint/")
    assert status == 404 and json.loads(body) == {"detail": "Not found."}
    status, _, body = call(base, "GET", "/no/such/page/")
    assert status == 404
    assert b"Not found" in body and b"URLconf" not in body and b"Traceback" not in body


def scrape(base, token) -> dict:
    status, _, body = call(base, "GET", "/metrics", token=token)
    assert status == 200, body
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def test_metrics_sum_every_worker_of_the_production_server(server):
    base = server["base"]
    admin, pilot = token_of(base, "admin", "admin"), token_of(base, "pilot")
    claimed = ("gridwms_matches_total", (("result", "claimed"),))
    empty = ("gridwms_matches_total", (("result", "empty"),))
    before = scrape(base, admin)
    resource = {"site": "LCG.PIC.es", "cpu_time": 100, "pilot_reference": "metrics"}
    answers = [
        call(base, "POST", "/api/v1/match/", resource, token=pilot)[0] for _ in range(12)
    ]  # a new connection each: both workers answer some
    after = scrape(base, admin)
    assert set(answers) <= {200, 204}
    assert after.get(claimed, 0) - before.get(claimed, 0) == answers.count(200)
    assert after.get(empty, 0) - before.get(empty, 0) == answers.count(204)
    assert after[("gridwms_waiting_jobs", ())] >= 0


def test_the_access_log_is_one_json_object_per_request(server):
    call(server["base"], "GET", "/healthz?from=access-log-test")
    time.sleep(0.5)
    lines = (server["tmp"] / "access.log").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    mine = [e for e in events if e.get("path") == "/healthz" and e.get("status") == 200]
    assert mine and all({"remote", "method", "ms", "time"} <= set(e) for e in mine)


@pytest.mark.browser
def test_every_page_draws_in_a_browser_against_the_production_server(server, browser):
    """Staff open every page of the permissions matrix that needs no object id (the browser
    suite's list), with its static files and plotly from the manifest."""
    from tests.browser.test_every_page_in_browser import page_rows

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = WatchedPage(context.new_page(), server["base"])
    try:
        page.login("admin", "admin")
        pages = [url for _, url in page_rows() if "{" not in url]
        assert len(pages) > 15
        for url in pages:
            response = page.goto(url)
            assert response.status == 200, url
            if page.page.locator(".js-plotly-plot").count():
                page.page.wait_for_selector(".js-plotly-plot .main-svg")
    finally:
        context.close()
    assert page.problems == [], "\n".join(page.problems)


@pytest.mark.browser
def test_a_user_follows_a_job_in_a_browser_against_the_production_server(server, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = WatchedPage(context.new_page(), server["base"])
    try:
        page.login("alice", PASSWORD)
        page.goto("/jobs/")
        page.page.locator("table a[href^='/jobs/']").first.click()
        page.page.wait_for_load_state("load")
        assert re.search(r"/jobs/\d+/$", page.page.url), page.page.url
        page.screenshot(f"production-job-{server['name']}")
    finally:
        context.close()
    assert page.problems == [], "\n".join(page.problems)
