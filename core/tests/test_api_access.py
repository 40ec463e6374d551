"""How clients find and enter the API: its root lists the API's own endpoints; an anonymous
program is told how to authenticate (401 + WWW-Authenticate); the documentation and the schema
answer anyone, and load nothing from another host."""

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_the_api_root_lists_the_api_endpoints_not_the_pages(world, users):
    from rest_framework.authtoken.models import Token

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=users['alice']).key}")
    root = client.get("/api/v1/")
    assert root.status_code == 200
    for name in ("jobs", "task-queues", "pilots", "sites", "tasks", "nuclei"):
        assert root.data[name] == f"http://testserver/api/v1/{name}/", name
    assert all(url.startswith("http://testserver/api/v1/") for url in root.data.values())
    listed = client.get(root.data["jobs"])  # each answers the token with JSON, not a redirect
    assert listed.status_code == 200 and "results" in listed.data


@pytest.mark.parametrize("url", ["/api/v1/", "/api/v1/jobs/", "/api/v1/groups/", "/api/v1/config/"])
def test_an_anonymous_program_is_told_how_to_authenticate(db, url):
    r = APIClient().get(url)
    assert r.status_code == 401
    assert r["WWW-Authenticate"] == "Token"


def test_a_wrong_token_is_refused_with_401_too(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    r = client.get("/api/v1/jobs/")
    assert r.status_code == 401 and r["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/", "/api/schema/"])
def test_an_anonymous_browser_reads_the_documentation_without_signing_in(db, url):
    r = Client(HTTP_ACCEPT=BROWSER_ACCEPT).get(url)
    assert r.status_code == 200, (url, r.status_code)


def test_redoc_loads_its_bundle_and_logo_locally(world, users):
    client = Client()
    client.force_login(users["alice"])
    html = client.get("/api/redoc/").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith("/") for s in sources), sources
    assert "/static/vendor/redoc.standalone.js" in sources
    bundle = b"".join(client.get("/static/vendor/redoc.standalone.js").streaming_content)
    assert b"cdn.redoc.ly" not in bundle and b"/static/img/redoc-logo.svg" in bundle
    assert client.get("/static/img/redoc-logo.svg").status_code == 200
