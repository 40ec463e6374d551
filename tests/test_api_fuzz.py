"""The API fuzzed from its own OpenAPI schema (schemathesis): the schema is a valid OpenAPI
document, and every generated request to any operation — valid or not — gets no 5xx, a status
the operation documents, and a body that fits the schema documented for that status.

Bounded so that the file stays quick: a few derandomised examples per operation and
generation mode, no shrinking, no example database. Requests go straight into the WSGI
application, in the test's own transaction, authenticated as staff with a token (staff may
call every operation, so the code behind the permission checks is reached). One test per
operation, so a failure names it; the demo world is built once for the module.
"""

import json
import re
from contextlib import contextmanager
from functools import cache

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from tests._matrix_world import build_demo, populate, shared_state

EXAMPLES = 20  # per operation: valid and invalid inputs, random and existing objects
# No 5xx; every status answered is documented, and every body fits its documented schema.
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def _document() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _operations() -> list[tuple[str, str]]:
    methods = {"get", "post", "put", "patch", "delete"}
    return sorted(
        (method.upper(), path)
        for path, item in _document()["paths"].items()
        for method in item
        if method in methods
    )


@cache
def _schema():
    from gridwms.wsgi import application

    # The document the endpoint serves, straight from its generator; the application is
    # called in process.
    schema = schemathesis.openapi.from_dict(json.loads(json.dumps(_document(), default=str)))
    schema.app = application
    return schema


def _build():
    state = build_demo()
    state["ids"] = populate(state["users"])
    from rest_framework.authtoken.models import Token

    state["token"] = Token.objects.get(user__username="admin").key
    return state


@pytest.fixture(scope="module")
def fuzz_world(django_db_setup, django_db_blocker):
    with shared_state(django_db_blocker, _build) as state:
        yield state


@contextmanager
def in_process_requests():
    """The WSGI handler closes 'old' connections at the start and end of every request; the
    test's connection is inside a transaction, so it would be closed under the test. Django's
    own test client switches this off the same way (and on again after each of its requests:
    no test client inside this block)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def test_the_openapi_schema_is_a_valid_document_naming_every_router_route(client):
    from drf_spectacular.validation import validate_schema

    from api.urls import routes

    # Anonymous: a generated client reads the schema before it has a token.
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    document = json.loads(response.content)
    validate_schema(document)  # raises on an invalid OpenAPI 3 document
    paths = set(document["paths"])
    for prefix, _viewset, _basename in routes:
        assert any(p.startswith(f"/api/v1/{prefix}/") for p in paths), prefix


def test_schemathesis_reads_every_operation_of_the_schema():
    loaded = []
    for result in _schema().get_all_operations():
        op = result.ok()  # raises on an operation schemathesis cannot read
        loaded.append((op.method.upper(), op.path))
    assert sorted(loaded) == _operations()


def _existing_keys(path: str, admin) -> tuple[str, list]:
    """For a detail path (`/api/v1/sites/{id}/...`), the lookup values of the objects its list
    shows staff: random ids mostly miss, these reach the code behind the lookup."""
    from rest_framework.test import APIClient

    match = re.search(r"{(\w+)}", path)
    if match is None:
        return "", []
    client = APIClient()
    client.force_authenticate(admin)
    response = client.get(path[: match.start()])
    assert response.status_code == 200, (path, response.status_code)
    rows = response.data["results"] if isinstance(response.data, dict) else response.data
    return match.group(1), [row[match.group(1)] for row in rows][:20]


def _first_page(case):
    """Most list queries carry a random cursor, which only ever gets 'invalid cursor': drop it
    from some cases so that the filters behind it are reached."""
    if isinstance(case.query, dict):
        case.query.pop("cursor", None)
    return case


@pytest.mark.parametrize(("method", "path"), _operations(), ids=lambda v: v)
def test_no_generated_request_gets_a_server_error(fuzz_world, db, method, path):
    with in_process_requests():  # the first call loads the schema through the application
        operation = _schema()[path][method]
    headers = {"Authorization": f"Token {fuzz_world['token']}"}
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    strategies = [operation.as_strategy(mode) for mode in modes]
    strategies.append(operation.as_strategy(GenerationMode.POSITIVE).map(_first_page))
    param, keys = _existing_keys(path, fuzz_world["users"]["admin"])
    if keys:
        strategies += [
            st.sampled_from(keys).flatmap(
                lambda key, mode=mode: operation.as_strategy(mode, path_parameters={param: key})
            )
            for mode in modes
        ]
    strategy = st.one_of(strategies)

    @FUZZ_SETTINGS
    @given(case=strategy)
    def fuzz(case):
        case.call_and_validate(headers=headers, checks=CHECKS)

    with in_process_requests():
        fuzz()


# --- regressions found by the fuzzing -------------------------------------------------------


def test_a_name_with_a_nul_character_names_no_object_without_asking_the_database(
    db, django_assert_num_queries
):
    """Found on PostgreSQL: a related object named with a NUL character (network-links'
    `source`, computing-elements' and panda-queues' `site`) reached the lookup, and PostgreSQL
    text cannot hold NUL: a 500. The field now rejects such a name itself."""
    from rest_framework.exceptions import ValidationError

    from api.core.fields import NamedRelatedField
    from matcher.models import Site

    field = NamedRelatedField(slug_field="name", queryset=Site.objects.all())
    for value in ("LCG.CERN\x00.ch", 5, ["LCG.CERN.ch"]):
        with django_assert_num_queries(0), pytest.raises(ValidationError):
            field.run_validation(value)


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        ("post", "/api/v1/computing-elements/", {"name": "ce", "site": "a\x00b"}, "site"),
        ("patch", "/api/v1/network-links/{link}/", {"source": "d\x00u"}, "source"),
        ("post", "/api/v1/panda-queues/", {"name": "q", "site": "\x00"}, "site"),
        ("post", "/api/v1/tasks/", {"name": "t", "owner_group": "lhcb\x00mc"}, "owner_group"),
    ],
)
def test_a_nul_character_in_a_related_name_is_a_400_naming_the_field(
    fuzz_world, db, api, method, url, body, field
):
    from brokerage.models import NetworkLink

    url = url.format(link=NetworkLink.objects.order_by("id").first().pk)
    response = getattr(api(fuzz_world["users"]["admin"]), method)(url, body, format="json")
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert field in response.data
