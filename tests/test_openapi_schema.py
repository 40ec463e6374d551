"""The OpenAPI schema as a generated client reads it: public, every operation summarised and
described for the API's users, every error with its body, ids typed as integers, nullable
fields declared so; and the API behind it: the job record names its pilot, CE and times, a
list counts on request, and a cursor that is not one answers 400."""

import json
import re
import time
from functools import cache

import pytest
from django.test import Client
from rest_framework.test import APIClient

METHODS = ("get", "post", "put", "patch", "delete")
# What a developer writes for a developer: notes, code paths and the framework's words.
INTERNAL = [
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\bTODO\b",
        r"\bFIXME\b",
        r"\bXXX\b",
        r"hot path",
        r"\b[a-z_]+\.[a-z_]+\.[A-Za-z_]+\b",  # a dotted module path
        r"\b[\w/]+\.py\b",  # a source file
        r"\bviewsets?\b",
        r"\bquerysets?\b",
        r"\bserializers?\b",
        r"\bmixins?\b",
        r"swagger_fake_view|schema generator",
        r"docs/[\w-]+\.md",
    )
]


@cache
def _served() -> dict:
    response = Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200, response.status_code
    return json.loads(response.content)


def _operations():
    for path, item in _served()["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield f"{method.upper()} {path}", path, operation


def test_an_anonymous_client_reads_the_schema_even_with_a_credential_it_cannot_use_yet(db):
    client = APIClient()
    assert client.get("/api/schema/", HTTP_ACCEPT="application/json").status_code == 200
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token-yet")
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    assert json.loads(response.content)["info"]["title"] == "gridwms API"
    assert client.get("/api/v1/jobs/").status_code == 401  # the API itself still asks


def test_the_schema_is_generated_once_not_for_every_anonymous_request(db):
    from unittest import mock

    from django.core.cache import cache as django_cache
    from drf_spectacular.generators import SchemaGenerator

    django_cache.clear()
    real = SchemaGenerator.get_schema
    with mock.patch.object(SchemaGenerator, "get_schema", autospec=True, side_effect=real) as gen:
        answers = [Client().get("/api/schema/?format=json") for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert answers[0].content == answers[2].content
    assert gen.call_count == 1
    yaml = Client().get("/api/schema/")  # another representation is its own entry
    assert yaml.status_code == 200 and yaml.content.startswith(b"openapi:")


def test_every_operation_has_a_summary_and_a_description_written_for_api_users(db):
    missing, internal = [], []
    for name, _path, operation in _operations():
        summary = operation.get("summary", "").strip()
        description = operation.get("description", "").strip()
        if not summary or not description:
            missing.append(name)
        for pattern in INTERNAL:
            for text in (summary, description):
                if pattern.search(text):
                    internal.append((name, pattern.search(text).group(0)))
    assert not missing, missing
    assert not internal, internal


def _descriptions(node, where=""):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary") and isinstance(value, str):
                yield where, value
            else:
                yield from _descriptions(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _descriptions(value, f"{where}/{i}")


def test_no_text_in_the_schema_is_a_note_for_developers(db):
    """Components, fields and parameters too: a serializer's inherited docstring or a help
    text naming a module is not for the API's users."""
    found = [
        (where, pattern.search(text).group(0))
        for where, text in _descriptions(_served())
        for pattern in INTERNAL
        if pattern.search(text)
    ]
    assert not found, found


def test_every_error_an_operation_answers_is_documented_with_its_body(db):
    document = _served()
    error = document["components"]["schemas"]["Error"]
    assert error["required"] == ["detail"]
    assert "ValidationError" in document["components"]["schemas"]
    for name, path, operation in _operations():
        responses = operation["responses"]
        for code, response in responses.items():
            if code.isdigit() and int(code) >= 400:
                schema = response["content"]["application/json"]["schema"]
                expected = {
                    "$ref": "#/components/schemas/" + ("Error", "ValidationError")[code == "400"]
                }
                assert schema == expected, (name, code)
        if operation.get("security") and {} not in operation["security"]:
            assert "401" in responses, name
        if "{" in path:
            assert "404" in responses, name


def test_a_write_only_staff_may_make_documents_403_and_a_read_everyone_may_does_not(db):
    paths = _served()["paths"]
    assert "403" in paths["/api/v1/sites/"]["post"]["responses"]
    assert "403" in paths["/api/v1/user-quotas/"]["get"]["responses"]
    assert "403" not in paths["/api/v1/sites/"]["get"]["responses"]
    assert "403" not in paths["/api/v1/jobs/"]["get"]["responses"]


def test_ids_in_paths_are_integers(db):
    seen = 0
    for name, _path, operation in _operations():
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path" and parameter["name"] == "id":
                assert parameter["schema"]["type"] == "integer", name
                seen += 1
    assert seen > 50


def test_every_field_read_through_a_nullable_model_field_is_declared_nullable(db):
    from django.core.exceptions import FieldDoesNotExist
    from drf_spectacular.generators import SchemaGenerator
    from rest_framework import serializers

    generator = SchemaGenerator()
    generator.get_schema(request=None, public=True)

    def nullable(model, attrs) -> bool:
        for attr in attrs:
            try:
                field = model._meta.get_field(attr)
            except FieldDoesNotExist:
                return False  # a property or method: its serializer field says
            if field.auto_created and not field.concrete:
                return False  # a reverse relation: a list, never null
            if field.null:
                return True
            if not field.is_relation:
                return False
            model = field.related_model
        return False

    checked, undeclared = 0, []
    for (name, kind), component in generator.registry._components.items():
        serializer = component.object
        model = getattr(getattr(serializer, "Meta", None), "model", None)
        if kind != "schemas" or name.endswith("Request") or model is None:
            continue
        properties = component.schema.get("properties", {})
        for field_name, field in serializer.fields.items():
            schema = properties.get(field_name)
            if schema is None or isinstance(field, serializers.SerializerMethodField):
                continue
            if field.source == "*" or not nullable(model, field.source_attrs):
                continue
            checked += 1
            if "type" in schema or "$ref" in schema or "allOf" in schema:
                if not schema.get("nullable"):
                    undeclared.append(f"{name}.{field_name}")
    assert checked > 20
    assert not undeclared, undeclared


def test_the_task_record_declares_its_nucleus_nullable_and_a_task_without_one_says_null(
    panda, users, api
):
    schema = _served()["components"]["schemas"]["Task"]["properties"]["nucleus"]
    assert schema["nullable"] is True
    from brokerage.models import Task

    response = api(users["alice"]).get("/api/v1/tasks/")
    assert response.status_code == 200
    assert Task.objects.filter(nucleus=None).count() == sum(
        row["nucleus"] is None for row in response.data["results"]
    )


# --- the job record, counts and cursors -------------------------------------------------------


class _Pilot:
    def __init__(self, user, reference="openapi-tests/1"):
        self.api = APIClient()
        self.api.force_authenticate(user)
        self.reference = reference

    def take(self) -> int:
        resource = {
            "site": "LCG.CERN.ch",
            "grid_ce": "ce504.cern.ch",
            "cpu_time": 86400,
            "platform": ["x86_64-el9"],
            "pilot_reference": self.reference,
        }
        deadline = time.monotonic() + 15  # a new TaskQueue reaches the match view within 1 s
        while time.monotonic() < deadline:
            answer = self.api.post("/api/v1/match/", resource, format="json")
            if answer.status_code == 200:
                return answer.json()["id"]
            assert answer.status_code == 204, answer.content
            time.sleep(0.3)
        raise AssertionError("no job was matched")

    def report(self, job: int, status: str, **extra) -> None:
        body = {"pilot_reference": self.reference, "status": status, **extra}
        answer = self.api.post(f"/api/v1/jobs/{job}/status/", body, format="json")
        assert answer.status_code == 200, answer.content


def test_the_job_record_names_its_pilot_ce_and_when_it_started_and_ended(submit, users, api):
    from matcher.models import Job

    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    alice = api(users["alice"])
    waiting = alice.get(f"/api/v1/jobs/{job.pk}/").data
    assert (waiting["pilot"], waiting["started"], waiting["ended"]) == (None, None, None)
    pilot = _Pilot(users["pilot"])
    assert pilot.take() == job.pk
    for status in ("starting", "running"):
        pilot.report(job.pk, status)
    running = alice.get("/api/v1/jobs/").data["results"][0]
    stored = Job.objects.get(pk=job.pk)
    assert running["grid_ce"] == "ce504.cern.ch" and running["pilot"] == stored.pilot_id
    assert running["pilot_reference"] == "openapi-tests/1"
    started = stored.history.get(to_status="starting").at
    assert running["started"] == started.isoformat().replace("+00:00", "Z")
    assert running["ended"] is None
    pilot.report(job.pk, "finished", exit_code=0)
    ended = alice.get(f"/api/v1/jobs/{job.pk}/").data
    finished_at = Job.objects.get(pk=job.pk).status_changed
    assert ended["ended"] == finished_at.isoformat().replace("+00:00", "Z")
    assert ended["started"] == running["started"]
    properties = _served()["components"]["schemas"]["Job"]["properties"]
    for name in ("pilot", "started", "ended"):
        assert properties[name]["nullable"] is True, name


def test_a_list_counts_what_its_filters_select_only_when_asked(submit, users, api):
    jobs = [submit("alice", cpu_time=100) for _ in range(4)]
    alice = api(users["alice"])
    assert alice.post(f"/api/v1/jobs/{jobs[0].pk}/kill/").status_code == 200
    plain = alice.get("/api/v1/jobs/?page_size=1")
    assert plain.status_code == 200 and "count" not in plain.data
    counted = alice.get("/api/v1/jobs/?page_size=1&count=true")
    assert counted.status_code == 200, counted.data
    assert counted.data["count"] == 4 and len(counted.data["results"]) == 1
    follow = alice.get(counted.data["next"] + "&count=true")
    assert follow.data["count"] == 4 and follow.data["results"][0]["id"] == jobs[2].pk
    cancelled = alice.get("/api/v1/jobs/?status=cancelled&count=true")
    assert cancelled.data["count"] == 1
    bad = alice.get("/api/v1/jobs/?count=maybe")
    assert bad.status_code == 400 and "count" in bad.data


@pytest.mark.parametrize("url", ["/api/v1/jobs/", "/api/v1/sites/", "/api/v1/notifications/sent/"])
# Not base64; base64 of "p=<NUL>"; of "p=abc" where the list is ordered by a number; a NUL.
@pytest.mark.parametrize("cursor", ["not-a-cursor", "cD0lMDA=", "cD1hYmM=", "\x00"])
def test_a_cursor_that_is_not_one_is_a_400_naming_the_cursor(world, users, api, url, cursor):
    response = api(users["alice"]).get(url, {"cursor": cursor})
    assert response.status_code == 400, (response.status_code, response.data)
    assert list(response.data) == ["cursor"]


def test_one_job_or_a_list_is_submitted_and_refused_in_the_documented_forms(world, users, api):
    operation = _served()["paths"]["/api/v1/jobs/"]["post"]
    created = operation["responses"]["201"]["content"]["application/json"]["schema"]
    assert created == {"$ref": "#/components/schemas/JobsCreated"}
    assert len(_served()["components"]["schemas"]["JobsCreated"]["oneOf"]) == 2
    alice = api(users["alice"])
    refused = alice.post("/api/v1/jobs/", [{"cpu_time": 100}, {"cpu_time": "soon"}], format="json")
    assert refused.status_code == 400
    assert list(json.loads(refused.content)) == ["1"]  # an object naming the bad job's place
    stored = alice.post("/api/v1/jobs/", [{"cpu_time": 100}, {"cpu_time": 200}], format="json")
    assert stored.status_code == 201 and len(stored.data) == 2
