"""Every bad input of a submission is a 400 (413 for bytes over the limit) naming its field,
and nothing is stored: no job, no file row, no file in the storage."""

import json

import pytest

from core import gdpconfig
from sandboxes.tests.conftest import JOB, multipart, nothing_stored, upload

pytestmark = pytest.mark.django_db

BAD_FIELDS = [
    ({"output_sandbox": ["/etc/passwd"]}, "output_sandbox"),
    ({"output_sandbox": ["../up.txt"]}, "output_sandbox"),
    ({"output_sandbox": ["out/../../*.txt"]}, "output_sandbox"),
    ({"output_sandbox": ["a\x00b"]}, "output_sandbox"),
    ({"output_sandbox": "*.txt"}, "output_sandbox"),
    ({"output_sandbox": [3]}, "output_sandbox"),
    ({"arguments": ["ok", 3]}, "arguments"),
    ({"arguments": "a b"}, "arguments"),
    ({"arguments": ["x" * 4097]}, "arguments"),
    ({"arguments": ["a"] * 257}, "arguments"),
    ({"environment": {"1BAD": "x"}}, "environment"),
    ({"environment": {"OK": 1}}, "environment"),
    ({"environment": ["A=1"]}, "environment"),
    ({"executable": 7}, "executable"),
    ({"executable": "/bin/echo\nrm"}, "executable"),
    ({"executable": "../../bin/sh"}, "executable"),
    ({"executable": "x" * 1025}, "executable"),
    ({"stdout_name": "../out"}, "stdout_name"),
    ({"stderr_name": "dir/err"}, "stderr_name"),
]


@pytest.mark.parametrize(("fields", "field"), BAD_FIELDS)
def test_a_bad_json_field_is_a_400_naming_it_and_stores_nothing(
    api, users, sandbox_root, fields, field
):
    job = {"executable": "/bin/echo", **JOB, **fields}
    r = api(users["alice"]).post("/api/v1/jobs/", job, format="json")
    assert r.status_code == 400
    assert field in r.json(), r.json()
    assert nothing_stored(sandbox_root)


@pytest.mark.parametrize(("fields", "field"), BAD_FIELDS)
def test_the_same_field_with_input_files_is_a_400_and_no_file_is_kept(
    api, users, sandbox_root, fields, field
):
    job = {"executable": "/bin/echo", **JOB, **fields}
    form = {"job": json.dumps(job), "input_sandbox": [upload("a.txt", b"data")]}
    r = api(users["alice"]).post("/api/v1/jobs/", form, format="multipart")
    assert r.status_code == 400
    assert field in r.json(), r.json()
    assert nothing_stored(sandbox_root)


def _submit_files(api, users, files):
    form = {"job": json.dumps({"executable": "/bin/cat", **JOB}), "input_sandbox": files}
    return api(users["alice"]).post("/api/v1/jobs/", form, format="multipart")


def test_too_many_input_files_is_a_400_naming_input_sandbox(api, users, sandbox_root):
    gdpconfig.set_value("MaxInputSandboxFiles", 2)
    r = _submit_files(api, users, [upload(f"f{n}") for n in range(3)])
    assert r.status_code == 400
    assert "MaxInputSandboxFiles" in r.json()["input_sandbox"][0]
    assert nothing_stored(sandbox_root)


def test_input_files_over_the_byte_limit_are_a_413_naming_input_sandbox(api, users, sandbox_root):
    gdpconfig.set_value("MaxInputSandboxBytes", 1000)
    r = _submit_files(api, users, [upload("a", b"x" * 600), upload("b", b"x" * 600)])
    assert r.status_code == 413
    assert "MaxInputSandboxBytes" in r.json()["input_sandbox"][0]
    assert nothing_stored(sandbox_root)


@pytest.mark.parametrize("name", ["../evil", "sub/file.txt", "..", "a\x01b", "x" * 256])
def test_an_unsafe_input_file_name_is_a_400_naming_input_sandbox(api, users, sandbox_root, name):
    job = json.dumps({"executable": "/bin/cat", **JOB})
    body, content_type = multipart({"job": job}, [("input_sandbox", name, b"data")])
    r = api(users["alice"]).generic("POST", "/api/v1/jobs/", body, content_type=content_type)
    assert r.status_code == 400
    assert "input_sandbox" in r.json(), r.json()
    assert nothing_stored(sandbox_root)


def test_two_input_files_of_one_name_are_a_400(api, users, sandbox_root):
    r = _submit_files(api, users, [upload("a.txt"), upload("a.txt")])
    assert r.status_code == 400 and "input_sandbox" in r.json()
    assert nothing_stored(sandbox_root)


def test_a_failure_after_the_files_were_written_leaves_none(api, users, sandbox_root, monkeypatch):
    from sandboxes import services

    def explode(*args, **kwargs):
        raise RuntimeError("the database is gone")

    monkeypatch.setattr(services.SandboxFile.objects, "create", explode)
    with pytest.raises(RuntimeError):
        _submit_files(api, users, [upload("a.txt", b"written first")])
    assert nothing_stored(sandbox_root)


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"job": "{not json"}, "job"),
        ({"job": json.dumps([JOB, JOB])}, "job"),
        ({"job": json.dumps(JOB), "jdl": "CPUTime = 1;"}, "job"),
        ({}, "job"),
        ({"job": json.dumps(JOB), "input_sandbox": "text, not a file"}, "input_sandbox"),
        ({"job": json.dumps(JOB), "colour": "blue"}, "colour"),
        ({"jdl": "CPUTime = ;"}, "jdl"),
    ],
)
def test_a_bad_multipart_form_is_a_400_naming_the_part(api, users, sandbox_root, form, field):
    r = api(users["alice"]).post("/api/v1/jobs/", form, format="multipart")
    assert r.status_code == 400
    assert field in r.json(), r.json()
    assert nothing_stored(sandbox_root)


def test_a_malformed_multipart_body_is_a_400_and_stores_nothing(api, users, sandbox_root):
    body = b'--XX\r\nContent-Disposition: form-data; name="job"\r\n\r\n{"cpu_time": 1'
    r = api(users["alice"]).generic(
        "POST", "/api/v1/jobs/", body, content_type="multipart/form-data; boundary=XX"
    )
    assert r.status_code == 400
    assert nothing_stored(sandbox_root)


def test_a_text_plain_jdl_with_a_bad_argument_string_names_the_jdl(api, users, sandbox_root):
    r = api(users["alice"]).post(
        "/api/v1/jobs/",
        'Executable = "/bin/echo"; Arguments = "\'open"; CPUTime = 1;',
        content_type="text/plain",
    )
    assert r.status_code == 400
    assert "Arguments" in r.json()["jdl"][0]
    assert nothing_stored(sandbox_root)
