"""A sandbox file's name refuses control and Unicode formatting characters ("\u202egnp.exe"
shows as "exe.png"): a 400 naming the file's field (input_sandbox, stdout, stderr, output,
output_sandbox), nothing stored; names in any script still pass. (Django's own form parser, on
the Submit page, drops such characters from a name.)"""

import json

import pytest

from matcher.models import Job
from sandboxes.models import SandboxFile
from sandboxes.tests.conftest import JOB, Pilot, multipart, stored_files, upload

pytestmark = pytest.mark.django_db

FORMATTING = ["\u202egnp.exe", "zero\u200bwidth.txt", "rlm\u200f.sh", "bom\ufeff.txt"]


@pytest.mark.parametrize("name", [*FORMATTING, "bell\x07.txt"])
def test_an_input_file_named_with_a_hidden_character_is_a_400_naming_input_sandbox(
    api, users, sandbox_root, name
):
    body, content_type = multipart(
        {"job": json.dumps({"executable": "/bin/true", **JOB})},
        [("input_sandbox", name, b"x")],
    )
    r = api(users["alice"]).generic("POST", "/api/v1/jobs/", body, content_type=content_type)
    assert r.status_code == 400, r.content
    assert list(r.json()) == ["input_sandbox"]
    assert f"U+{ord(next(c for c in name if not c.isprintable())):04X}" in str(r.json())
    assert not Job.objects.exists() and not stored_files(sandbox_root)


def test_an_output_sandbox_pattern_with_a_formatting_character_is_a_400_naming_it(api, users):
    job = {**JOB, "executable": "/bin/true", "output_sandbox": ["\u202etxt.exe"]}
    r = api(users["alice"]).post("/api/v1/jobs/", job, format="json")
    assert r.status_code == 400, r.content
    assert list(r.json()) == ["output_sandbox"]


@pytest.fixture
def running(api, users):
    from matcher import dispatcher

    dispatcher.invalidate_cache()
    pilot = Pilot(api(users["pilot"]))
    r = api(users["alice"]).post("/api/v1/jobs/", {"executable": "/bin/true", **JOB}, format="json")
    job_id = r.json()["id"]
    assert pilot.take()["id"] == job_id
    assert pilot.report(job_id, "running").status_code == 200
    return pilot, job_id


@pytest.mark.parametrize("part", ["stdout", "output"])
@pytest.mark.parametrize("name", FORMATTING)
def test_an_output_file_named_with_a_formatting_character_is_a_400_naming_its_part(
    running, sandbox_root, part, name
):
    pilot, job_id = running
    body, content_type = multipart({"pilot_reference": pilot.reference}, [(part, name, b"1")])
    r = pilot.api.generic("POST", f"/api/v1/jobs/{job_id}/output/", body, content_type=content_type)
    assert r.status_code == 400, r.content
    assert list(r.json()) == [part]
    assert not SandboxFile.objects.exists() and not stored_files(sandbox_root)
    fine = upload("résultat ✓.txt", b"1")
    assert pilot.upload(job_id, output=[fine]).status_code == 200
