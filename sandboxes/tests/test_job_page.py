"""The job page shows what the job runs and what it did: the command line, the output so far
while it runs, the kill requested, the exit code and resources, the output files' links."""

import json

import pytest

from sandboxes.tests.conftest import JOB, upload

pytestmark = pytest.mark.django_db


def _running(api, users, pilot) -> int:
    job = {"executable": "/bin/echo", "arguments": ["hello world"], **JOB}
    r = api(users["alice"]).post("/api/v1/jobs/", {"job": json.dumps(job)}, format="multipart")
    job_id = r.json()["id"]
    pilot.take()
    pilot.report(job_id, "running")
    return job_id


def test_a_running_job_shows_its_command_line_and_output_so_far(client, api, users, pilot):
    job_id = _running(api, users, pilot)
    pilot.heartbeat(job_id, output_tail="<b>halfway</b>\n")
    client.force_login(users["alice"])
    html = client.get(f"/jobs/{job_id}/").content.decode()
    assert "/bin/echo &#x27;hello world&#x27;" in html
    assert "&lt;b&gt;halfway&lt;/b&gt;" in html  # escaped, never markup
    api(users["alice"]).post(f"/api/v1/jobs/{job_id}/kill/")
    assert 'id="kill-requested"' in client.get(f"/jobs/{job_id}/").content.decode()


def test_an_ended_job_shows_its_exit_code_resources_and_output_links(client, api, users, pilot):
    job_id = _running(api, users, pilot)
    pilot.upload(job_id, stdout=upload("std.out", b"hello world\n"))
    pilot.report(job_id, "finished", exit_code=3, cpu_seconds=0.5, wall_seconds=1.0)
    client.force_login(users["alice"])
    html = client.get(f"/jobs/{job_id}/").content.decode()
    assert '<dd id="exit-code">3</dd>' in html
    assert "wall 1.0 s" in html
    assert f'href="/api/v1/jobs/{job_id}/sandbox/std.out"' in html


def test_the_web_form_submits_what_a_job_runs(client, users):
    from matcher.models import Job

    client.force_login(users["bob"])
    form = {
        "owner_group": "lhcb_user",
        "cpu_time": 60,
        "user_priority": 1,
        "executable": "/bin/echo",
        "arguments": "hello 'big world'",
        "output_sandbox": "*.txt, out/*.root",
    }
    r = client.post("/jobs/submit/", form)
    assert r.status_code == 302, r.content.decode()[:2000]
    job = Job.objects.get()
    assert (job.executable, job.arguments) == ("/bin/echo", ["hello", "big world"])
    assert job.output_sandbox == ["*.txt", "out/*.root"]


def test_the_web_form_shows_a_bad_output_pattern_on_its_field(client, users):
    from matcher.models import Job

    client.force_login(users["bob"])
    form = {"owner_group": "lhcb_user", "cpu_time": 60, "user_priority": 1}
    r = client.post("/jobs/submit/", {**form, "executable": "x", "output_sandbox": "../up"})
    assert r.status_code == 200 and "leave the working directory" in r.content.decode()
    assert not Job.objects.exists()
