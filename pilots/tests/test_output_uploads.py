"""A job's pilot uploads its outputs: only its own pilot, only while it holds the job, within
MaxOutputSandboxBytes; staged until the final report, so a pilot that dies mid-upload leaves
nothing shown as complete."""

import pytest
from django.core.files.uploadhandler import TemporaryFileUploadHandler
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core import gdpconfig
from matcher.models import Job
from sandboxes import services
from sandboxes.models import SandboxFile
from sandboxes.tests.conftest import JOB, Pilot, multipart, stored_files, upload

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sandbox_root")]


@pytest.fixture
def running(api, users, pilot):
    """alice's job, taken and running under the generic pilot `p-1`."""
    r = api(users["alice"]).post("/api/v1/jobs/", {"executable": "/bin/true", **JOB}, format="json")
    job_id = r.json()["id"]
    assert pilot.take()["id"] == job_id
    assert pilot.report(job_id, "running").status_code == 200
    return job_id


def test_the_outputs_are_shown_only_after_the_final_report(api, users, pilot, running):
    r = pilot.upload(running, stdout=upload("std.out", b"hi\n"), output=[upload("r.txt", b"42")])
    assert r.status_code == 200, r.content
    assert sorted(f["name"] for f in r.json()["files"]) == ["r.txt", "std.out"]
    owner = api(users["alice"])
    assert owner.get(f"/api/v1/jobs/{running}/sandbox/").json() == []
    assert pilot.report(running, "finished", exit_code=0).status_code == 200
    listed = owner.get(f"/api/v1/jobs/{running}/sandbox/").json()
    assert [(f["name"], f["kind"], f["size"]) for f in listed] == [
        ("std.out", "stdout", 3),
        ("r.txt", "output", 2),
    ]


def test_an_output_in_a_subdirectory_keeps_its_relative_name(api, users, pilot, running):
    body, content_type = multipart(
        {"pilot_reference": pilot.reference}, [("output", "sub/dir/r.txt", b"1")]
    )
    r = pilot.api.generic(
        "POST", f"/api/v1/jobs/{running}/output/", body, content_type=content_type
    )
    assert r.status_code == 200, r.content
    assert r.json()["files"] == [{"name": "sub/dir/r.txt", "size": 1}]


@pytest.mark.parametrize("name", ["/etc/passwd", "../up.txt", "a/../../b", "..", "x\x01y"])
def test_an_unsafe_output_name_is_a_400_naming_output_and_nothing_is_staged(
    pilot, running, sandbox_root, name
):
    body, content_type = multipart({"pilot_reference": pilot.reference}, [("output", name, b"1")])
    r = pilot.api.generic(
        "POST", f"/api/v1/jobs/{running}/output/", body, content_type=content_type
    )
    assert r.status_code == 400
    assert "output" in r.json()
    assert not SandboxFile.objects.exclude(kind="input").exists()
    assert not stored_files(sandbox_root)


def test_outputs_over_the_limit_are_a_413_naming_output(pilot, running, sandbox_root):
    gdpconfig.set_value("MaxOutputSandboxBytes", 1000)
    r = pilot.upload(
        running, stdout=upload("std.out", b"x" * 600), output=[upload("b", b"y" * 600)]
    )
    assert r.status_code == 413
    assert "MaxOutputSandboxBytes" in r.json()["output"][0]
    assert not SandboxFile.objects.exists() and not stored_files(sandbox_root)


def test_a_body_declared_far_over_the_limit_is_refused_before_it_is_read(pilot, running):
    gdpconfig.set_value("MaxOutputSandboxBytes", 1000)
    r = pilot.api.generic(
        "POST",
        f"/api/v1/jobs/{running}/output/",
        b"",
        content_type="multipart/form-data; boundary=x",
        CONTENT_LENGTH=str(50 * 1024 * 1024),
    )
    assert r.status_code == 413


def test_another_pilot_may_not_upload(api, users, running):
    other = Pilot(api(users["pilot"]), reference="p-2")
    other.api.post("/api/v1/pilots/", {"reference": "p-2", "site": "LCG.CERN.ch"}, format="json")
    r = other.upload(running, stdout=upload("std.out"))
    assert r.status_code == 403
    r = Pilot(api(users["bob"]), reference="p-1").upload(running, stdout=upload("std.out"))
    assert r.status_code == 403
    assert not SandboxFile.objects.exists()


def test_a_pilot_may_not_upload_for_another_job(api, users, pilot, running):
    r = api(users["alice"]).post("/api/v1/jobs/", JOB, format="json")
    assert pilot.upload(r.json()["id"], stdout=upload("std.out")).status_code == 403


def test_a_finished_job_takes_no_more_uploads(pilot, running):
    assert pilot.report(running, "finished", exit_code=0).status_code == 200
    assert pilot.upload(running, stdout=upload("std.out")).status_code == 409


def test_a_pilot_dying_mid_upload_leaves_nothing_shown(api, users, pilot, running, sandbox_root):
    body, content_type = multipart(
        {"pilot_reference": pilot.reference}, [("stdout", "std.out", b"half")]
    )
    cut = body[: len(body) // 2 + 40]
    r = pilot.api.generic("POST", f"/api/v1/jobs/{running}/output/", cut, content_type=content_type)
    assert r.status_code == 400
    # An upload that went through, then the pilot is lost: staged, never listed.
    assert pilot.upload(running, stdout=upload("std.out", b"all")).status_code == 200
    Job.objects.filter(pk=running).update(status="failed")  # the heartbeat timeout's doing
    assert api(users["alice"]).get(f"/api/v1/jobs/{running}/sandbox/").json() == []
    assert services.outputs(running) == []
    assert api(users["alice"]).get(f"/api/v1/jobs/{running}/sandbox/std.out").status_code == 404


def test_a_second_upload_replaces_the_staged_one(
    pilot, running, sandbox_root, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert pilot.upload(running, stdout=upload("std.out", b"first")).status_code == 200
        assert pilot.upload(running, stdout=upload("std.out", b"second")).status_code == 200
        assert pilot.report(running, "finished", exit_code=0).status_code == 200
    [entry] = services.outputs(running)
    assert services.read_text(entry) == "second"
    assert len(stored_files(sandbox_root)) == 1


SPOOLED: list[str] = []


class RecordingUploadHandler(TemporaryFileUploadHandler):
    """Django's handler spooling a file part to a temporary file, recording that it did."""

    def new_file(self, field_name, *args, **kwargs):
        SPOOLED.append(field_name)
        return super().new_file(field_name, *args, **kwargs)


@pytest.fixture
def spooled(settings):
    settings.FILE_UPLOAD_HANDLERS = [f"{__name__}.RecordingUploadHandler"]
    SPOOLED.clear()
    yield SPOOLED
    SPOOLED.clear()


def _with_token(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


BIG = b"z" * (8 * 1024 * 1024)  # over FILE_UPLOAD_MAX_MEMORY_SIZE: spooled to disk if read


def _upload_big(client, job_id: int, reference: str, query: str = ""):
    form = {"pilot_reference": reference, "stdout": upload("std.out", BIG)}
    return client.post(f"/api/v1/jobs/{job_id}/output/{query}", form, format="multipart")


def test_an_upload_from_another_credential_is_refused_before_its_body_is_read(
    api, users, pilot, running, spooled
):
    assert _upload_big(_with_token(users["bob"]), running, "p-1").status_code == 403
    staff = _upload_big(_with_token(users["admin"]), running, "p-1")
    assert staff.status_code == 403
    assert spooled == []  # no file part was ever spooled
    assert not SandboxFile.objects.exists()
    # The job's own pilot: its body is read, its file spooled and staged.
    assert _upload_big(pilot.api, running, "p-1").status_code == 200
    assert spooled == ["stdout"]


def test_an_upload_naming_another_pilot_in_its_query_is_refused_before_its_body_is_read(
    pilot, running, spooled
):
    r = _upload_big(pilot.api, running, "p-2", query="?pilot_reference=p-2")
    assert r.status_code == 403
    assert spooled == []
    same = _upload_big(pilot.api, running, "p-1", query="?pilot_reference=p-1")
    assert same.status_code == 200, same.content
    other = _upload_big(pilot.api, running, "p-2", query="?pilot_reference=p-1")
    assert other.status_code == 400 and "pilot_reference" in other.json()


def test_a_signed_in_browser_may_not_upload_outputs_and_its_body_is_never_read(
    users, running, spooled
):
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(users["alice"])
    browser.get("/jobs/")  # the CSRF cookie, as a page sets it
    token = browser.cookies["csrftoken"].value
    form = {"pilot_reference": "p-1", "stdout": upload("std.out", BIG)}
    r = browser.post(
        f"/api/v1/jobs/{running}/output/", form, format="multipart", HTTP_X_CSRFTOKEN=token
    )
    assert r.status_code in (401, 403)
    assert spooled == []
