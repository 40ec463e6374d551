"""DiracX's real command line (diracx-cli, installed unmodified under .clients/diracx/) against a
live gridwms: the credentials file from `manage.py diracx_credentials`, then `dirac jobs
submit`, `dirac jobs search` and `dirac whoami` over HTTP, as a DiracX user types them."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

from matcher import vocabularies
from matcher.models import Job

ROOT = Path(__file__).resolve().parents[1]
DIRAC = ROOT / ".clients" / "diracx" / "bin" / "dirac"
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not DIRAC.exists(), reason="DiracX's client not installed (make install)"),
]
HELLO = """\
JobName = "hello";
Executable = "/bin/echo";
Arguments = "hello world";
CPUTime = 600;
"""


@pytest.fixture
def dirac(live_server, world, tmp_path):
    """dirac(user, *args) -> the finished `dirac` process, run as that user."""

    def run(user: str, *args: str) -> subprocess.CompletedProcess:
        home = tmp_path / user
        credentials = home / "credentials.json"
        if not credentials.exists():
            call_command("diracx_credentials", user, "--output", str(credentials))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "DIRACX_URL": live_server.url,
            "DIRACX_CREDENTIALS_PATH": str(credentials),
            "DIRACX_OUTPUT_FORMAT": "JSON",
        }
        return subprocess.run(
            [str(DIRAC), *args],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def _submit(dirac, user: str, text: str, tmp_path) -> subprocess.CompletedProcess:
    jdl = tmp_path / f"{user}.jdl"
    jdl.write_text(text)
    return dirac(user, "jobs", "submit", str(jdl))


def _search(dirac, user: str, job_id: int) -> list[dict]:
    out = dirac(user, "jobs", "search", "--condition", f"JobID eq {job_id}")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_diracx_user_submits_a_jdl_and_finds_it_by_its_id(dirac, tmp_path):
    out = _submit(dirac, "alice", HELLO, tmp_path)
    assert out.returncode == 0, out.stderr
    match = re.search(r"Inserted 1 jobs with ids: (\d+)$", out.stdout.strip())
    assert match, out.stdout
    job = Job.objects.get(pk=int(match.group(1)))
    assert (job.owner.username, job.name, job.arguments) == ("alice", "hello", ["hello", "world"])

    [row] = _search(dirac, "alice", job.pk)
    assert (row["JobID"], row["Owner"], row["JobName"]) == (job.pk, "alice", "hello")
    assert row["Status"] == vocabularies.dirac_status(job.status)
    assert row["Status"] in vocabularies.DIRAC_STATUSES
    assert set(row) == {
        "JobID",
        "Status",
        "MinorStatus",
        "ApplicationStatus",
        "JobGroup",
        "Site",
        "JobName",
        "Owner",
        "LastUpdateTime",
    }
    # Another user's search does not show it.
    assert _search(dirac, "bob", job.pk) == []


def test_whoami_names_the_user_of_the_credentials(dirac):
    out = dirac("alice", "whoami")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert (info["preferred_username"], info["dirac_group"]) == ("alice", "lhcb_user")


def test_a_malformed_jdl_makes_the_command_fail_and_stores_nothing(dirac, tmp_path):
    out = _submit(dirac, "alice", "Executable = ;;; [[[", tmp_path)
    assert out.returncode != 0
    assert "Inserted" not in out.stdout
    assert "jdl[0]: JDL: not valid ClassAd syntax" in " ".join(out.stderr.split())
    assert not Job.objects.exists()


def test_a_parametric_jdl_submitted_by_the_cli_makes_one_job_per_parameter(dirac, tmp_path):
    text = HELLO.replace('"hello world"', '"hello %s"') + 'Parameters = {"a", "b"};\n'
    out = _submit(dirac, "alice", text, tmp_path)
    assert out.returncode == 0, out.stderr
    ids = [int(i) for i in out.stdout.strip().rsplit(" ", 1)[1].split(",")]
    assert [Job.objects.get(pk=i).arguments for i in ids] == [["hello", "a"], ["hello", "b"]]


def test_the_cli_pages_through_a_larger_result(dirac, tmp_path):
    text = HELLO + "Parameters = 12;\n"
    assert _submit(dirac, "alice", text, tmp_path).returncode == 0
    out = dirac("alice", "jobs", "search", "--parameter", "JobID", "--per-page", "5", "--page", "3")
    assert out.returncode == 0, out.stderr
    ids = sorted(Job.objects.values_list("pk", flat=True))
    assert [row["JobID"] for row in json.loads(out.stdout)] == ids[10:]
