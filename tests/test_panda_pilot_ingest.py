"""What the PanDA pilot's launcher does once the pilot has exited (pilots.panda_pilots.ingest): the
log tarball it left in its output directory is stored with the job's outputs only when its size
and adler32 are those of the final updateJob, the payload's stdout and stderr read out of it; a
job the pilot still held is failed as a pilot failure, never left waiting on it."""

import io
import json
import tarfile
from pathlib import Path
from urllib.parse import urlencode

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from matcher.models import Job
from pilots import panda_launch, panda_pilots
from pilots.models import PandaLogReport
from sandboxes import services as sandboxes

pytestmark = pytest.mark.django_db
QUEUE = "LOCAL_REAL_PILOTS"
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def pilot(users):
    from brokerage.topology_import import import_topology
    from simulation import panda_demo
    from simulation.demo import local_worker_node

    local_worker_node("http://127.0.0.1:8000")
    import_topology(panda_demo.local_topology())
    client = APIClient()
    key = Token.objects.get_or_create(user=users["pilot"])[0].key
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def post(client, path, **fields):
    return client.post(path, urlencode(fields), content_type=FORM)


@pytest.fixture
def running(pilot, users, api) -> Job:
    answer = api(users["alice"]).post(
        "/api/v1/jobs/",
        {"executable": "/bin/echo", "arguments": ["hello"], "cpu_time": 60},
        format="json",
    )
    job_id = answer.json()["id"]
    assert post(pilot, "/server/panda/getJob", siteName=QUEUE).json()["PandaID"] == job_id
    assert post(pilot, "/server/panda/updateJob", jobId=job_id, state="running").status_code == 200
    return Job.objects.get(pk=job_id)


def tarball(stdout: bytes) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in (("payload.stdout", stdout), ("payload.stderr", b""), ("x.txt", b"x")):
            info = tarfile.TarInfo(f"tarball_PandaJob_1_Q/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def left_by_the_pilot(workdir: Path, name: str, data: bytes) -> None:
    path = workdir / "out" / panda_launch.rucio_path(panda_launch.SCOPE, name)
    path.parent.mkdir(parents=True)
    path.write_bytes(data)


def finish(pilot, job: Job, name: str, size: int, adler32: str) -> None:
    xml = json.dumps({name: {"guid": "g", "fsize": size, "adler32": adler32}})
    answer = post(pilot, "/server/panda/updateJob", jobId=job.pk, state="finished", xml=xml)
    assert answer.json() == {"StatusCode": 0, "command": "NULL"}


def test_the_log_the_final_report_declared_is_stored_with_the_payloads_stdout(
    pilot, running, tmp_path
):
    name, data = f"gridwms.{running.pk}.0.log.tgz", tarball(b"hello\n")
    left_by_the_pilot(tmp_path, name, data)
    finish(pilot, running, name, len(data), panda_launch.adler32_of_bytes(data))
    assert panda_pilots.ingest(running.pilot_id, tmp_path, 0) == {running.pk: "stored"}
    stored = sandboxes.output_file(running.pk, name)
    assert stored.file.open("rb").read() == data
    assert sandboxes.read_text(sandboxes.stream_file(running.pk, "stdout")) == "hello\n"
    assert PandaLogReport.objects.get(job_id=running.pk).outcome == "stored"
    assert Job.objects.get(pk=running.pk).status == "finished"


@pytest.mark.parametrize("wrong", ["size", "adler32"])
def test_a_log_that_differs_from_the_final_report_is_not_stored(pilot, running, tmp_path, wrong):
    name, data = f"gridwms.{running.pk}.0.log.tgz", tarball(b"hello\n")
    left_by_the_pilot(tmp_path, name, data)
    size, adler = len(data), panda_launch.adler32_of_bytes(data)
    if wrong == "size":
        size += 1
    else:
        adler = "00000001"
    finish(pilot, running, name, size, adler)
    [outcome] = panda_pilots.ingest(running.pilot_id, tmp_path, 0).values()
    assert "not stored" in outcome and outcome == PandaLogReport.objects.get().outcome
    assert sandboxes.outputs(running.pk) == []


def test_a_declared_log_the_pilot_did_not_leave_is_reported_missing(pilot, running, tmp_path):
    name = f"gridwms.{running.pk}.0.log.tgz"
    finish(pilot, running, name, 10, "0000000a")
    [outcome] = panda_pilots.ingest(running.pilot_id, tmp_path, 0).values()
    assert outcome.startswith("no file") and sandboxes.outputs(running.pk) == []


def test_a_job_the_pilot_still_held_when_it_exited_is_rescheduled_as_a_pilot_failure(
    pilot, running, tmp_path
):
    assert panda_pilots.ingest(running.pilot_id, tmp_path, 1) == {}
    job = Job.objects.get(pk=running.pk)
    assert job.status == "activated" and job.pilot_id is None
    assert "PanDA pilot exited (code 1)" in job.history.last().reason
