"""A job's page while its payload runs and after: the output tail follows the pilot's
heartbeats without a reload, the page turns to the final stdout, stderr and output files when
the job ends, the files download, and the owner asks to be told when it ends in one click.

The pilot's side is the real pilot transport (pilots/client) over HTTP to the same server the
browser uses, so the files land in that server's sandbox storage."""

import time

import pytest
from rest_framework.authtoken.models import Token

from core import gdpconfig
from pilots.client.transport import Client, FilePart
from simulation import demo

pytestmark = pytest.mark.browser

REFERENCE = "browser/payload/1"


@pytest.fixture
def own_sandbox_root(tmp_path, settings):
    """The live server's sandbox storage in the test's directory (the production server gets
    its own from tests/browser/conftest.py)."""
    settings.STORAGES = {
        **settings.STORAGES,
        "sandboxes": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "sandboxes")},
        },
    }


def _running_job(page) -> tuple[int, Client]:
    from matcher import services
    from shares.models import User

    demo.create_world()
    alice = User.objects.get(username="alice")
    alice.email = "alice@example.org"
    alice.save(update_fields=["email"])
    spec = {
        "owner_group": alice.grid_groups.first(),
        "setup": gdpconfig.get("DefaultSetup"),
        "cpu_time": 100,
        "sites": ["LCG.CERN.ch"],
        "executable": "/bin/sh",
        "arguments": ["run.sh"],
        "output_sandbox": ["result.txt"],
    }
    [job] = services.submit_jobs(alice, [spec])
    pilot = Client(page.base_url, Token.objects.get(user__username="pilot").key)
    resource = {
        "site": "LCG.CERN.ch",
        "grid_ce": "ce504.cern.ch",
        "cpu_time": 86400,
        "platform": ["x86_64-el9"],
        "pilot_reference": REFERENCE,
    }
    deadline = time.monotonic() + 15  # a new TaskQueue reaches the match view within 1 s
    status, answer = pilot.post("/api/v1/match/", resource)
    while status == 204 and time.monotonic() < deadline:
        time.sleep(0.3)
        status, answer = pilot.post("/api/v1/match/", resource)
    assert (status, answer.get("id")) == (200, job.pk), answer
    for state in ("starting", "running"):
        report = {"pilot_reference": REFERENCE, "status": state}
        assert pilot.post(f"/api/v1/jobs/{job.pk}/status/", report)[0] == 200
    return job.pk, pilot


def _heartbeat(pilot: Client, job_id: int, tail: str) -> None:
    body = {"pilot_reference": REFERENCE, "output_tail": tail}
    assert pilot.post(f"/api/v1/jobs/{job_id}/heartbeat/", body)[0] in (200, 204)


def test_the_job_page_follows_the_output_then_shows_the_logs_and_files(
    page, own_sandbox_root, tmp_path
):
    job_id, pilot = _running_job(page)
    _heartbeat(pilot, job_id, "step 1\n")
    page.login("alice", demo.USER_PASSWORD)
    page.goto(f"/jobs/{job_id}/")
    assert page.page.text_content("#output-tail") == "step 1\n"
    assert page.page.text_content("#pilot-ce") == "ce504.cern.ch"

    # One click asks to be told when it ends, and comes back to the job.
    page.page.click("#notify-job button[type=submit]")
    page.page.wait_for_selector("#notify-job >> text=You will be told when it ends (email)")
    assert page.page.url.endswith(f"/jobs/{job_id}/")

    # The tail follows the heartbeats without a reload.
    _heartbeat(pilot, job_id, "step 1\nstep 2\n")
    page.page.wait_for_function(
        "document.querySelector('#output-tail').textContent.includes('step 2')", timeout=20000
    )

    # The pilot uploads its outputs and reports the end: the page turns to the final logs.
    files = []
    for name, data in (("std.out", b"step 1\nstep 2\ndone\n"), ("std.err", b"a warning\n"),
                       ("result.txt", b"42\n")):  # fmt: skip
        path = tmp_path / name
        path.write_bytes(data)
        part = {"std.out": "stdout", "std.err": "stderr"}.get(name, "output")
        files.append(FilePart(part, name, str(path)))
    status, answer = pilot.post_multipart(
        f"/api/v1/jobs/{job_id}/output/", [("pilot_reference", REFERENCE)], files
    )
    assert status in (200, 201), answer
    final = {"pilot_reference": REFERENCE, "status": "finished", "exit_code": 0}
    assert pilot.post(f"/api/v1/jobs/{job_id}/status/", final)[0] == 200
    page.page.wait_for_selector("#log-stdout", timeout=20000)
    assert page.page.text_content("#log-stdout") == "step 1\nstep 2\ndone\n"
    assert page.page.text_content("#log-stderr") == "a warning\n"
    assert page.page.text_content("#exit-code") == "0"
    assert not page.page.query_selector("#output-tail")

    with page.page.expect_download() as download:
        page.page.click('#sandbox-outputs a:text("result.txt")')
    saved = tmp_path / "downloaded.txt"
    download.value.save_as(saved)
    assert saved.read_bytes() == b"42\n"
    page.screenshot("job-output")
    assert page.problems == []
