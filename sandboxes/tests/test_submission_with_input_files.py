"""A job submitted with its input files: multipart with a `job` JSON part or a `jdl` part,
or a JDL as text/plain; the files stored with it, byte for byte, and nothing on any 400."""

import json

import pytest

from matcher.models import Job
from sandboxes.models import SandboxFile
from sandboxes.services import input_manifest
from sandboxes.tests.conftest import JOB, stored_files, upload

pytestmark = pytest.mark.django_db


def _post(client, job=None, files=(), **parts):
    form = {**parts}
    if job is not None:
        form["job"] = json.dumps(job)
    if files:
        form["input_sandbox"] = list(files)
    return client.post("/api/v1/jobs/", form, format="multipart")


def test_a_json_job_with_files_is_stored_with_them_byte_for_byte(api, users, sandbox_root):
    data = bytes(range(256)) * 4
    r = _post(api(users["alice"]), {"executable": "/bin/cat", **JOB}, [upload("d.bin", data)])
    assert r.status_code == 201, r.content
    job = Job.objects.get(pk=r.json()["id"])
    assert job.executable == "/bin/cat" and job.owner == users["alice"]
    [entry] = input_manifest(job.pk)
    assert (entry["name"], entry["size"]) == ("d.bin", len(data))
    [path] = stored_files(sandbox_root)
    assert path.read_bytes() == data
    assert "d.bin" not in str(path)  # stored under the job's id and a random token


def test_a_jdl_part_names_its_input_files(api, users):
    jdl = 'Executable = "/bin/cat"; Arguments = "a.txt"; InputSandbox = {"a.txt"}; CPUTime = 100;'
    r = _post(api(users["alice"]), None, [upload("a.txt")], jdl=jdl)
    assert r.status_code == 201, r.content
    job = Job.objects.get()
    assert (job.arguments, job.jdl) == (["a.txt"], jdl)
    assert [e["name"] for e in input_manifest(job.pk)] == ["a.txt"]


def test_a_jdl_naming_a_file_not_uploaded_is_a_400_naming_input_sandbox(api, users, sandbox_root):
    jdl = 'Executable = "/bin/cat"; InputSandbox = {"a.txt", "b.txt"}; CPUTime = 100;'
    r = _post(api(users["alice"]), None, [upload("a.txt")], jdl=jdl)
    assert r.status_code == 400
    assert "b.txt" in r.json()["input_sandbox"][0]
    assert not Job.objects.exists() and not stored_files(sandbox_root)


def test_a_text_plain_jdl_is_a_job_with_its_arguments_split_like_a_shell(api, users):
    jdl = """[ Executable = "/bin/echo"; Arguments = "one 'two three' \\"four\\"";
        StdOutput = "out.log"; OutputSandbox = {"*.root"};
        ExecutionEnvironment = {"A=1", "B=x=y"}; CPUTime = 100; ]"""
    r = api(users["alice"]).post("/api/v1/jobs/", jdl, content_type="text/plain")
    assert r.status_code == 201, r.content
    job = Job.objects.get()
    assert job.arguments == ["one", "two three", "four"]
    assert (job.stdout_name, job.stderr_name) == ("out.log", "std.err")
    assert job.output_sandbox == ["*.root"]
    assert job.environment == {"A": "1", "B": "x=y"}


def test_the_job_detail_shows_what_it_runs_and_its_input_files(api, users):
    client = api(users["alice"])
    job = {"executable": "run.sh", "arguments": ["-n", "3"], "environment": {"X": "1"}, **JOB}
    r = _post(client, job, [upload("run.sh", b"echo hi\n")])
    detail = client.get(f"/api/v1/jobs/{r.json()['id']}/").json()
    assert detail["executable"] == "run.sh" and detail["arguments"] == ["-n", "3"]
    assert detail["environment"] == {"X": "1"}
    assert detail["input_sandbox"] == [{"name": "run.sh", "size": 8}]
    assert (detail["exit_code"], detail["kill_requested"], detail["output_tail"]) == (
        None,
        False,
        "",
    )


def test_a_job_without_an_executable_still_runs_the_old_way(api, users):
    r = api(users["alice"]).post("/api/v1/jobs/", JOB, format="json")
    assert r.status_code == 201
    job = Job.objects.get()
    assert (job.executable, job.arguments, job.stdout_name) == ("", [], "std.out")
    assert not SandboxFile.objects.exists()


def test_input_files_may_exceed_the_plain_request_limit_up_to_their_own(api, users, settings):
    settings.REQUEST_MAX_BYTES = 4096  # JSON bodies and pages' forms
    r = _post(api(users["alice"]), {"executable": "/bin/cat", **JOB}, [upload("big", b"x" * 9000)])
    assert r.status_code == 201, r.content
    settings.UPLOAD_MAX_BYTES = 8192  # the multipart bodies of the jobs' API
    r = _post(api(users["alice"]), {"executable": "/bin/cat", **JOB}, [upload("big", b"x" * 9000)])
    assert r.status_code == 413
