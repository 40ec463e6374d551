"""A real pilot's failing payload can be diagnosed: `manage.py pilot` against a live server runs
a payload that exits 3; the job fails with an error code and category (PanDA's 1305, payload),
shown on the job page and in the API, with the pilot's worker node; the pilot page shows what
the pilot logged, which the API gives too."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from matcher.models import Job
from pilots.models import Pilot

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.django_db(transaction=True)


def _run_pilot(url: str, token: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "manage.py", "pilot", "--url", url, "--token", token]
    command += ["--site", "LCG.CERN.ch", "--ce", "ce504.cern.ch", "--max-seconds", "600"]
    command += ["--heartbeat", "0.5", "--reference", "pilot://ce504/exit-three"]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_real_pilots_payload_exiting_3_fails_its_job_with_a_code_and_a_category(
    live_server, users, api
):
    alice = api(users["alice"])
    answer = alice.post(
        "/api/v1/jobs/",
        {"executable": "/bin/sh", "arguments": ["-c", "echo working; exit 3"], "cpu_time": 60},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    job_id = answer.json()["id"]

    out = _run_pilot(live_server.url, Token.objects.get(user=users["pilot"]).key)
    assert out.returncode == 0, out.stderr
    assert "0 jobs done, 1 failed" in out.stdout

    job = Job.objects.get(pk=job_id)
    assert (job.status, job.exit_code) == ("failed", 3)
    assert (job.error_code, job.error_category) == (1305, "payload")
    body = alice.get(f"/api/v1/jobs/{job_id}/").json()
    assert (body["error_code"], body["error_category"], body["exit_code"]) == (1305, "payload", 3)

    browser = Client()
    browser.force_login(users["alice"])
    html = browser.get(f"/jobs/{job_id}/").content.decode()
    assert '<dd id="error-code"><b>1305</b> <code>PAYLOADEXECUTIONFAILURE</code>' in html
    assert 'id="error-category"' in html and ">payload</a>" in html
    assert f'<dd id="worker-hostname">{socket.gethostname()}</dd>' in html
    assert "matched job" in html  # its pilot's log about the job

    pilot = Pilot.objects.get(reference="pilot://ce504/exit-three")
    assert pilot.hostname == socket.gethostname() and pilot.node["cores"] >= 1
    admin = Client()
    admin.force_login(users["admin"])
    page = admin.get(f"/pilots/{pilot.pk}/").content.decode()
    assert 'id="pilot-log"' in page
    assert f"matched job {job_id} (CPU time 60 s)" in page
    assert "ending Done: ran 0 jobs, 1 failed" in page
    logged = api(users["admin"]).get(f"/api/v1/pilots/{pilot.pk}/log/").json()
    levels = {line["message"]: line["level"] for line in logged}
    assert levels[f"job {job_id}: failed"] == "ERROR"
    assert any(line["job_id"] == job_id for line in logged)
