"""Bad input, bounded: deep, big or too many answer 4xx with a clear message, never 500, and
store nothing."""

import json

import pytest
from django.test import override_settings

from core import gdpconfig
from matcher.models import Job

JOBS = "/api/v1/jobs/"
MATCH = "/api/v1/match/"


def post_raw(client, url, body: bytes | str, **extra):
    return client.post(url, data=body, content_type="application/json", **extra)


@pytest.fixture
def alice(api, users):
    return api(users["alice"])


def test_a_body_nested_five_thousand_levels_deep_answers_400_not_500(alice):
    body = '{"cpu_time": ' + "[" * 5000 + "]" * 5000 + "}"
    r = post_raw(alice, JOBS, body)
    assert r.status_code == 400
    assert r.json()["detail"] == "JSON nested deeper than 64 levels"
    assert not Job.objects.exists()


def test_a_body_nested_deeper_than_64_levels_answers_400_on_every_json_endpoint(alice, api, users):
    body = json.dumps({"site": "LCG.CERN.ch", "tag": [[[[["x"]]]]] * 1}).replace(
        '"x"', "[" * 70 + "]" * 70
    )
    for client, url in ((alice, JOBS), (api(users["pilot"]), MATCH)):
        r = post_raw(client, url, body)
        assert r.status_code == 400, (url, r.content)
        assert "nested deeper than 64 levels" in r.json()["detail"]


def test_nesting_within_the_limit_is_judged_by_the_fields(alice):
    body = json.dumps({"cpu_time": 100, "tags": [[["deep"]]]})
    r = post_raw(alice, JOBS, body)
    assert r.status_code == 400
    assert set(r.json()) == {"tags"}


def test_malformed_json_answers_400_saying_where(alice):
    r = post_raw(alice, JOBS, '{"cpu_time": 100,')
    assert r.status_code == 400
    assert r.json()["detail"].startswith("JSON parse error")


def test_oversized_json_fields_answer_400_naming_the_field(alice):
    body = {"cpu_time": 100, "tags": [f"tag{i}" for i in range(10_000)], "name": "x" * 100_000}
    r = post_raw(alice, JOBS, json.dumps(body))
    assert r.status_code == 400
    assert set(r.json()) == {"tags", "name"}
    assert "no more than 200 elements" in r.json()["tags"][0]
    assert "no more than 128 characters" in r.json()["name"][0]
    assert not Job.objects.exists()


def test_a_job_list_over_max_jobs_per_submission_answers_400_before_any_job_is_judged(alice):
    gdpconfig.set_value("MaxJobsPerSubmission", 5)
    # six jobs, each of them wrong: only the count is reported (nothing else was validated)
    r = alice.post(JOBS, [{"cpu_time": -1}] * 6, format="json")
    assert r.status_code == 400
    [message] = r.json()["non_field_errors"]
    assert "MaxJobsPerSubmission" in message and "at most 5 jobs" in message and "has 6" in message
    assert alice.post(JOBS, [{"cpu_time": 10}] * 5, format="json").status_code == 201
    assert Job.objects.count() == 5


@override_settings(REQUEST_MAX_BYTES=4096)
def test_a_body_over_the_size_limit_answers_413(alice):
    body = json.dumps([{"cpu_time": 10, "name": f"job {i}"} for i in range(200)])
    assert len(body) > 4096
    r = post_raw(alice, JOBS, body)
    assert r.status_code == 413
    assert r.json()["detail"] == (
        f"request body of {len(body)} bytes is over the limit of 4096 bytes (REQUEST_MAX_BYTES)"
    )
    assert not r.has_header("Connection")  # hop-by-hop: the server's to send (PEP 3333)
    assert not Job.objects.exists()
    assert post_raw(alice, JOBS, json.dumps({"cpu_time": 10})).status_code == 201


@override_settings(REQUEST_MAX_BYTES=4096)
def test_a_page_form_over_the_size_limit_answers_413_too(client, users):
    client.force_login(users["alice"])
    # A form without files (multipart bodies of the Submit page may carry files up to theirs).
    form = "cpu_time=10&name=" + "x" * 5000
    r = client.post("/jobs/submit/", form, content_type="application/x-www-form-urlencoded")
    assert r.status_code == 413
