"""Staff open every page of the permissions matrix in a real browser: each answers 200, draws
without a console error, and leaves a screenshot named after its route."""

import re

import pytest

from simulation import demo
from tests import test_permissions_matrix as matrix

pytestmark = pytest.mark.browser

SKIP = {"login", "logout", "favicon.ico", "admin:index", "schema", "metrics"}  # metrics: text


def page_rows():
    """(route, url) of every HTML page staff may open, once per route."""
    seen, rows = set(), []
    for route, method, url, _body, expected in matrix.ROWS:
        if method != "GET" or url.startswith("/api/v1/") or route in SKIP or route in seen:
            continue
        if expected.split()[-1] != "200":
            continue
        seen.add(route)
        rows.append((route, url))
    return rows


def test_the_matrix_lists_pages_for_the_browser():
    names = {route for route, _url in page_rows()}
    assert {"home", "job-detail", "task-detail", "simulation-clock"} <= names


def test_staff_open_every_page_and_each_draws_without_errors(page):
    state = matrix._build()
    ids = state["ids"]
    page.login("admin", demo.ADMIN_PASSWORD)
    for route, url in page_rows():
        concrete = re.sub(r"{(\w+)}", lambda m: str(ids[m.group(1)]), url)
        response = page.goto(concrete)
        assert response.status == 200, (route, concrete, response.status)
        charts = page.page.locator(".plotly-graph-div").count()
        if charts:
            page.page.wait_for_selector(".js-plotly-plot .main-svg")
        page.screenshot("page-" + route.replace(":", "-"))
