"""PanDA's own pilot (panda-pilot, unmodified, .clients/panda-pilot/) runs gridwms jobs over HTTP
against a live server: it gets a job (getJob), runs its payload, reports starting, running and
finished (updateJob), and its launcher stores the log tarball it left, checked against the final
report; a job killed while it runs reaches it as `tobekilled`."""

import io
import os
import tarfile
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from core import gdpconfig
from matcher.models import Job
from pilots import panda_launch, panda_pilots
from pilots.models import PandaLogReport, Pilot
from sandboxes import services as sandboxes

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (panda_launch.PILOT_DIR / "pilot.py").exists(),
        reason="PanDA's pilot is installed by scripts/install_clients.sh",
    ),
]
QUEUE = "LOCAL_REAL_PILOTS"


@pytest.fixture
def worker_node(live_server, users):
    """The demo's local worker node and its PanDA queue; the generic pilot's API token."""
    from rest_framework.authtoken.models import Token

    from brokerage.topology_import import import_topology
    from simulation import panda_demo
    from simulation.demo import local_worker_node

    local_worker_node(live_server.url)
    import_topology(panda_demo.local_topology())
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    return Token.objects.get_or_create(user=users["pilot"])[0].key


def _submit(api, users, arguments: list[str]) -> int:
    answer = api(users["alice"]).post(
        "/api/v1/jobs/",
        {"executable": "/bin/sh", "arguments": arguments, "cpu_time": 60},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    return answer.json()["id"]


def _wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def test_the_real_panda_pilot_runs_a_job_whose_log_is_stored_as_it_reported(
    live_server, worker_node, users, api
):
    job_id = _submit(api, users, ["-c", "echo hello"])
    run = panda_pilots.run_pilot(
        live_server.url, worker_node, QUEUE, heartbeat=10, timeout=110, lifetime=300
    )
    job = Job.objects.get(pk=job_id)
    assert job.status == "finished", (job.status, job.status_reason, run.output.read_text()[-3000:])
    assert [h.to_status for h in job.history.all()] == [
        "activated",
        "sent",
        "starting",
        "running",
        "finished",
    ]
    assert job.exit_code == 0
    pilot = Pilot.objects.get(pk=job.pilot_id)
    assert pilot.reference == run.reference and pilot.status == "Done"
    # The stored log is the file the pilot's final report declared.
    report = PandaLogReport.objects.get(job_id=job_id)
    assert run.logs == {job_id: panda_pilots.STORED} and report.outcome == panda_pilots.STORED
    log = sandboxes.output_file(job_id, report.name)
    assert log is not None
    data = log.file.open("rb").read()
    assert len(data) == report.size == log.size
    assert panda_launch.adler32_of_bytes(data) == report.adler32
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        [stdout] = [m for m in tar.getmembers() if m.name.endswith("/payload.stdout")]
        assert b"hello" in tar.extractfile(stdout).read()
    # The job's API lists the log among its outputs, and its stdout read out of the tarball.
    alice = api(users["alice"])
    listed = alice.get(f"/api/v1/jobs/{job_id}/sandbox/").json()
    assert {"name": report.name, "size": report.size, "kind": "output"}.items() <= {
        k: v for f in listed if f["name"] == report.name for k, v in f.items()
    }.items()
    assert any(f["kind"] == "stdout" for f in listed)
    stdout = alice.get(f"/api/v1/jobs/{job_id}/log/?stream=stdout")
    assert stdout.status_code == 200 and b"hello" in b"".join(stdout.streaming_content)
    # The launcher removed the pilot's directory once the log was kept.
    assert not run.workdir.exists()


@pytest.mark.timeout(480)
def test_a_job_killed_while_the_real_panda_pilot_runs_it_reaches_the_pilot_as_tobekilled(
    live_server, worker_node, users, api
):
    job_id = _submit(api, users, ["-c", "echo started; sleep 300"])
    runs = []

    def pilot():
        try:
            runs.append(
                panda_pilots.run_pilot(
                    live_server.url, worker_node, QUEUE, heartbeat=10, timeout=200, lifetime=300
                )
            )
        finally:
            connection.close()  # this thread's own

    thread = threading.Thread(target=pilot)
    thread.start()
    try:
        assert _wait_for(lambda: Job.objects.get(pk=job_id).status == "running", 60)
        killed = api(users["alice"]).post(f"/api/v1/jobs/{job_id}/kill/", {}, format="json")
        assert killed.status_code == 200, killed.content
        # The pilot's next heartbeat is answered tobekilled; it stops the payload and its
        # final update acknowledges the kill.
        # Its monitor's loops come round slowly on a busy machine: minutes, not seconds.
        assert _wait_for(lambda: not Job.objects.get(pk=job_id).kill_requested, 170)
    finally:
        thread.join(230)
    job = Job.objects.get(pk=job_id)
    assert job.status == "cancelled"
    assert job.error_code == 1144  # PanDA's pilot: killed by the server
    assert runs and "panda server signal to kill job" in runs[0].output.read_text()
    # The pilot and its payload are gone, nothing of them left reparented to pid 1 (the
    # payload's `sleep` would be, working in the pilot's directory).
    time.sleep(1)  # a SIGKILL is delivered, not awaited
    assert _processes_in(runs[0].workdir) == []


def _processes_in(workdir: Path) -> list[str]:
    """The processes running a command or working in the directory."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(entry / "cwd")
        except (OSError, ValueError):
            continue
        if entry.name.isdigit() and (str(workdir) in cmdline or cwd.startswith(str(workdir))):
            out.append(f"{entry.name}: {cmdline}")
    return out
