"""Nothing a job wrote is lost silently: a real pilot process runs a payload whose outputs are
over MaxOutputSandboxBytes against a live server; the job keeps the head and tail of its stdout
and the files that fit, it is flagged, and `gridwms get` says what is missing and exits 3.
(A smaller limit than the default keeps the test fast; the code path is the same.)"""

# ruff: noqa: F811  (the command's fixtures, imported, are the tests' arguments)
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from core import gdpconfig
from matcher.models import Job
from sandboxes import services as sandboxes
from tests.test_cli import alice, gridwms  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.django_db(transaction=True)
LIMIT = 1024 * 1024

PAYLOAD = textwrap.dedent(
    """
    import sys
    for n in range(60000):  # 60,000 numbered lines, about 3 MiB
        print("line %05d " % n + "x" * 40)
    sys.stderr.write("a warning\\n")
    open("big.dat", "wb").write(b"b" * (2 * 1024 * 1024))
    open("small.txt", "w").write("kept\\n")
    """
)


def run_pilot(url: str, users) -> str:
    token = Token.objects.get(user=users["pilot"]).key
    out = subprocess.run(
        [sys.executable, "manage.py", "pilot", "--url", url, "--token", token,
         "--site", "LCG.CERN.ch", "--ce", "ce504.cern.ch", "--max-seconds", "600"],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=True,
    )  # fmt: skip
    return out.stdout + out.stderr


def test_outputs_over_the_limit_keep_the_tail_of_stdout_and_the_job_says_what_is_missing(
    live_server, api, users, alice
):
    gdpconfig.set_value("MaxOutputSandboxBytes", LIMIT)
    answer = api(users["alice"]).post(
        "/api/v1/jobs/",
        {
            "executable": sys.executable,
            "arguments": ["-c", PAYLOAD],
            "output_sandbox": ["*.dat", "*.txt"],
            "cpu_time": 60,
            "sites": ["LCG.CERN.ch"],
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    job_id = answer.json()["id"]
    log = run_pilot(live_server.url, users)

    job = Job.objects.get(pk=job_id)
    assert job.status == "finished", (job.status_reason, log[-3000:])
    assert job.status_reason == "exit code 0; output truncated"
    assert job.output_truncated.startswith("over MaxOutputSandboxBytes (1.0 MiB): stdout std.out")
    assert "left out: big.dat (2.0 MiB)" in job.output_truncated
    files = {f.name: f for f in sandboxes.outputs(job_id)}
    assert set(files) == {"std.out", "std.err", "small.txt"}
    assert sum(f.size for f in files.values()) <= LIMIT
    stdout = sandboxes.read_text(files["std.out"])
    assert stdout.startswith("line 00000 ") and stdout.endswith("line 59999 " + "x" * 40 + "\n")
    assert "bytes were cut here (over MaxOutputSandboxBytes)]" in stdout
    assert sandboxes.read_text(files["std.err"]) == "a warning\n"

    shown = api(users["alice"]).get(f"/api/v1/jobs/{job_id}/").json()
    assert shown["output_truncated"] == job.output_truncated
    got = alice("get", str(job_id))
    assert got.returncode == 3, got.stderr
    assert f"job {job_id}: output truncated: over MaxOutputSandboxBytes" in got.stderr
    kept = alice.cwd / f"job_{job_id}" / "std.out"
    assert kept.read_text().endswith("line 59999 " + "x" * 40 + "\n")
    assert (alice.cwd / f"job_{job_id}" / "small.txt").read_text() == "kept\n"
    assert not (alice.cwd / f"job_{job_id}" / "big.dat").exists()


def test_the_job_page_shows_that_its_output_was_truncated(client, users, submit):
    job = submit("alice", cpu_time=60, executable="/bin/true")
    Job.objects.filter(pk=job.pk).update(output_truncated="left out: big.dat (2.0 MiB)")
    client.force_login(users["alice"])
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="output-truncated"' in page and "left out: big.dat (2.0 MiB)" in page
