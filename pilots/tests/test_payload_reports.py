"""What a job's pilot tells of the payload: the match answer's payload, the exit information
with the final report (a non-zero exit code fails the job), the output tail with heartbeats,
and a kill reaching the pilot in the answer to its next heartbeat."""

import json

import pytest

from core import gdpconfig
from matcher.models import Job
from sandboxes.tests.conftest import JOB, upload

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sandbox_root")]

PAYLOAD = {
    "executable": "/bin/sh",
    "arguments": ["run.sh", "--fast"],
    "environment": {"MODE": "test"},
    "output_sandbox": ["*.txt"],
}


def _submit(api, users, **fields) -> int:
    form = {"job": json.dumps({**PAYLOAD, **JOB, **fields})}
    form["input_sandbox"] = [upload("run.sh", b"echo hi\n")]
    r = api(users["alice"]).post("/api/v1/jobs/", form, format="multipart")
    assert r.status_code == 201, r.content
    return r.json()["id"]


def test_the_match_answer_carries_the_payload_and_its_wall_limit(api, users, pilot):
    gdpconfig.set_value("PayloadWallFactor", 3.0)
    job_id = _submit(api, users)
    payload = pilot.take()["payload"]
    assert payload["executable"] == "/bin/sh"
    assert payload["arguments"] == ["run.sh", "--fast"]
    assert payload["environment"] == {"MODE": "test"}
    assert payload["output_sandbox"] == ["*.txt"]
    assert (payload["stdout_name"], payload["stderr_name"]) == ("std.out", "std.err")
    assert payload["wall_limit_seconds"] == 300.0
    [entry] = payload["input_sandbox"]
    assert (entry["name"], entry["size"], len(entry["sha256"])) == ("run.sh", 8, 64)
    got = pilot.api.get(f"/api/v1/jobs/{job_id}/input/run.sh", {"pilot_reference": "p-1"})
    assert got.status_code == 200 and b"".join(got.streaming_content) == b"echo hi\n"
    assert got["Content-Type"] == "application/octet-stream"


def test_a_job_without_an_executable_has_a_null_payload(api, users, pilot):
    api(users["alice"]).post("/api/v1/jobs/", JOB, format="json")
    assert pilot.take()["payload"] is None


def test_input_files_go_only_to_the_jobs_pilot_while_it_starts_it(api, users, pilot):
    job_id = _submit(api, users)
    pilot.take()
    url = f"/api/v1/jobs/{job_id}/input/run.sh"
    assert api(users["alice"]).get(url, {"pilot_reference": "p-1"}).status_code == 403
    assert pilot.api.get(url, {"pilot_reference": "p-2"}).status_code == 403
    assert pilot.api.get(url, {"pilot_reference": "p-\x001"}).status_code == 403
    assert pilot.api.get(f"/api/v1/jobs/{job_id}/input/nothing.sh", {"pilot_reference": "p-1"}
                         ).status_code == 404  # fmt: skip
    pilot.report(job_id, "running")
    pilot.report(job_id, "finished", exit_code=0)
    assert pilot.api.get(url, {"pilot_reference": "p-1"}).status_code == 409


def test_a_finished_report_with_a_non_zero_exit_code_fails_the_job_with_it(api, users, pilot):
    job_id = _submit(api, users)
    pilot.take()
    pilot.report(job_id, "running")
    r = pilot.report(
        job_id,
        "finished",
        exit_code=3,
        application_status="bad input",
        cpu_seconds=1.5,
        wall_seconds=2.25,
        peak_memory_kb=2048,
        hostname="wn1.cern.ch",
    )
    assert r.status_code == 200 and r.json()["status"] == "failed"
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.status_reason) == ("failed", "exit code 3; bad input")
    assert (job.exit_code, job.cpu_seconds, job.wall_seconds) == (3, 1.5, 2.25)
    assert (job.peak_memory_kb, job.hostname) == (2048, "wn1.cern.ch")


def test_a_zero_exit_code_finishes_the_job(api, users, pilot):
    job_id = _submit(api, users)
    pilot.take()
    pilot.report(job_id, "running")
    assert pilot.report(job_id, "finished", exit_code=0).json()["status"] == "finished"
    assert Job.objects.get(pk=job_id).exit_code == 0


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"exit_code": "3"}, "exit_code"),
        ({"exit_code": 1.5}, "exit_code"),
        ({"cpu_seconds": -1}, "cpu_seconds"),
        ({"wall_seconds": "long"}, "wall_seconds"),
        ({"peak_memory_kb": -5}, "peak_memory_kb"),
        ({"hostname": "h" * 256}, "hostname"),
        ({"application_status": 7}, "application_status"),
    ],
)
def test_bad_exit_information_is_a_400_naming_it(api, users, pilot, extra, field):
    job_id = _submit(api, users)
    pilot.take()
    r = pilot.report(job_id, "running", **extra)
    assert r.status_code == 400 and field in r.json()
    assert Job.objects.get(pk=job_id).status == "sent"


def test_heartbeats_carry_the_output_tail_shown_as_the_running_log(api, users, pilot):
    job_id = _submit(api, users)
    pilot.take()
    pilot.report(job_id, "running")
    assert pilot.heartbeat(job_id, output_tail="line 1\nline 2\n").status_code == 204
    assert Job.objects.get(pk=job_id).output_tail == "line 1\nline 2\n"
    log = api(users["alice"]).get(f"/api/v1/jobs/{job_id}/log/", {"tail": 1})
    assert (log.status_code, log.content) == (200, b"line 2\n")
    assert log["Content-Type"].startswith("text/plain")
    assert pilot.heartbeat(job_id, output_tail="x" * 4097).status_code == 400


def test_a_kill_reaches_the_pilot_at_its_next_heartbeat_and_it_acknowledges(api, users, pilot):
    job_id = _submit(api, users)
    pilot.take()
    pilot.report(job_id, "running")
    owner = api(users["alice"])
    assert owner.post(f"/api/v1/jobs/{job_id}/kill/").status_code == 200
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.kill_requested) == ("cancelled", True)
    assert owner.get(f"/api/v1/jobs/{job_id}/").json()["kill_requested"] is True
    beat = pilot.heartbeat(job_id, output_tail="stopping\n")
    assert (beat.status_code, beat.json()) == (200, {"commands": ["kill"]})
    r = pilot.report(job_id, "cancelled", reason="killed on request", exit_code=-15,
                     wall_seconds=4.0)  # fmt: skip
    assert (r.status_code, r.json()["status"]) == (200, "cancelled")
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.kill_requested, job.exit_code, job.wall_seconds) == (
        "cancelled",
        False,
        -15,
        4.0,
    )
    assert pilot.heartbeat(job_id).status_code == 409  # nothing more to say


def test_a_killed_jobs_pilot_brings_back_its_outputs_with_its_acknowledgement(api, users, pilot):
    job_id = _submit(api, users)
    pilot.take()
    pilot.report(job_id, "running")
    api(users["alice"]).post(f"/api/v1/jobs/{job_id}/kill/")
    assert pilot.upload(job_id, stdout=upload("std.out", b"until killed\n")).status_code == 200
    assert api(users["alice"]).get(f"/api/v1/jobs/{job_id}/sandbox/").json() == []  # not yet
    pilot.report(job_id, "cancelled", reason="killed on request")
    listing = api(users["alice"]).get(f"/api/v1/jobs/{job_id}/sandbox/").json()
    assert [f["name"] for f in listing] == ["std.out"]
    # The kill acknowledged, the pilot has no more say on the job.
    assert pilot.upload(job_id, stdout=upload("std.out", b"more\n")).status_code == 409


def test_a_job_killed_before_any_pilot_took_it_has_no_kill_pending(api, users, pilot):
    job_id = _submit(api, users)
    api(users["alice"]).post(f"/api/v1/jobs/{job_id}/kill/")
    assert Job.objects.get(pk=job_id).kill_requested is False


def test_a_cancelled_report_of_a_job_not_killed_is_refused(api, users, pilot):
    job_id = _submit(api, users)
    pilot.take()
    pilot.report(job_id, "running")
    assert pilot.report(job_id, "cancelled").status_code == 409
    assert Job.objects.get(pk=job_id).status == "running"


def test_a_reschedule_clears_the_last_runs_results(api, users, pilot):
    job_id = _submit(api, users)
    pilot.take()
    pilot.report(job_id, "running")
    pilot.report(job_id, "finished", exit_code=2, hostname="wn")
    assert api(users["alice"]).post(f"/api/v1/jobs/{job_id}/reschedule/").status_code == 200
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.exit_code, job.hostname) == ("activated", None, "")
