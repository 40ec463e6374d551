"""PanDA's real client library (panda-client 2.2.0, unmodified, in its own environment under
.clients/) against a live gridwms server: Client.hello, submitJobs, getJobStatus and killJobs,
authenticated by a token of `manage.py panda_token` as PANDA_AUTH=oidc sends it."""

import json
import os
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from matcher.models import Job

ROOT = Path(__file__).resolve().parents[1]
CLIENT_PYTHON = ROOT / ".clients" / "panda-client" / "bin" / "python"
pytestmark = pytest.mark.django_db(transaction=True)

# Run by the client's own python: the calls of a user's script, their results as JSON (the last
# line of its output; the client's logger writes before it).
SCRIPT = r"""
import json
from pandaclient import Client
from pandaclient.JobSpec import JobSpec

def job(name):
    spec = JobSpec()
    spec.jobName = name
    spec.transformation = "/bin/echo"
    spec.jobParameters = "hello from 'PanDA client'"
    spec.computingSite = "LCG.CERN.ch"
    spec.prodSourceLabel = "user"
    spec.maxCpuCount = 100
    spec.coreCount = 1
    return spec

alive = Client.hello()
status, submitted = Client.submitJobs([job("kept"), job("killed")])
ids = [entry[0] for entry in submitted]
described_status, described = Client.getJobStatus(ids)
kill_status, killed = Client.killJobs([ids[1]])
_, after = Client.getJobStatus(ids)
print(json.dumps({
    "alive": alive,
    "status": status,
    "ids": ids,
    "described_status": described_status,
    "described": [[j.PandaID, j.jobName, j.jobStatus, j.computingSite, j.jobParameters,
                   j.prodUserName, str(type(j.creationTime).__name__)] for j in described],
    "kill_status": kill_status,
    "killed": killed,
    "after": [j.jobStatus for j in after],
}))
"""


def panda_token(username: str, lifetime: int = 600) -> str:
    out = StringIO()
    call_command("panda_token", username, "--lifetime", str(lifetime), stdout=out)
    return out.getvalue().strip()


def client_environment(url: str, token: str, config_root: Path) -> dict[str, str]:
    """What a user sets for PanDA's client against gridwms (docs/user-guide.md)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PANDA", "OIDC", "X509"))}
    env.update(
        PANDA_URL=f"{url}/server/panda",
        PANDA_URL_SSL=f"{url}/server/panda",
        PANDACACHE_URL=f"{url}/server/panda",
        PANDA_AUTH="oidc",
        PANDA_AUTH_VO=settings.GRID_VO,
        PANDA_AUTH_ID_TOKEN=token,
        PANDA_CONFIG_ROOT=str(config_root),
    )
    return env


def run_client(script: str, env: dict[str, str]) -> dict:
    assert CLIENT_PYTHON.exists(), "PanDA's client is missing: run `make install`"
    out = subprocess.run(
        [str(CLIENT_PYTHON), "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_real_client_submits_reads_and_kills_jobs(live_server, users, tmp_path):
    env = client_environment(live_server.url, panda_token("alice"), tmp_path)
    result = run_client(SCRIPT, env)

    assert result["alive"] == [0, "alive=yes"]
    assert result["status"] == 0
    kept, killed = result["ids"]
    assert Job.objects.get(pk=kept).owner == users["alice"]
    assert result["described_status"] == 0
    assert result["described"] == [
        [pk, name, "activated", "LCG.CERN.ch", "hello from 'PanDA client'", "alice", "datetime"]
        for pk, name in ((kept, "kept"), (killed, "killed"))
    ]
    assert (result["kill_status"], result["killed"]) == (0, [True])
    assert result["after"] == ["activated", "cancelled"]
    assert Job.objects.get(pk=killed).status == "cancelled"
    assert Job.objects.get(pk=kept).arguments == ["hello", "from", "PanDA client"]


def test_the_real_client_sees_nothing_of_another_users_jobs(live_server, users, tmp_path):
    bobs = run_client(SCRIPT, client_environment(live_server.url, panda_token("bob"), tmp_path))
    kept = bobs["ids"][0]
    script = (
        "import json\nfrom pandaclient import Client\n"
        f"s, jobs = Client.getJobStatus([{kept}])\n"
        f"k, killed = Client.killJobs([{kept}])\n"
        "print(json.dumps([s, jobs, k, killed]))\n"
    )
    env = client_environment(live_server.url, panda_token("alice"), tmp_path)
    assert run_client(script, env) == [0, [None], 0, [False]]
    assert Job.objects.get(pk=kept).status == "activated"


def test_the_real_client_with_an_expired_token_gets_nothing(live_server, users, tmp_path):
    from api.core import tokens

    expired = tokens.issue(users["alice"], lifetime_seconds=-10)
    script = (
        "import json\nfrom pandaclient import Client\n"
        "print(json.dumps(list(Client.getJobStatus([1]))))\n"
    )
    env = client_environment(live_server.url, expired, tmp_path)
    status, jobs = run_client(script, env)
    assert (status, jobs) == (255, None)  # the client's EC_Failed: the server answered 401


def test_the_real_client_reads_the_token_from_its_token_file_too(live_server, users, tmp_path):
    # The client's own cache of a token: $PANDA_CONFIG_ROOT/.token, {"id_token": ...}.
    (tmp_path / ".token").write_text(json.dumps({"id_token": panda_token("alice")}))
    env = client_environment(live_server.url, "", tmp_path)
    del env["PANDA_AUTH_ID_TOKEN"]
    assert run_client(SCRIPT, env)["killed"] == [True]
    assert Job.objects.filter(owner=users["alice"], status="cancelled").count() == 1


FINISHED_SCRIPT = r"""
import json, sys
from pandaclient import Client
from pandaclient.JobSpec import JobSpec

if sys.argv[1] == "submit":
    spec = JobSpec()
    spec.jobName = "hello"
    spec.transformation = "/bin/sh"
    spec.jobParameters = "-c 'echo hello from the PanDA client'"
    spec.computingSite = sys.argv[2]
    spec.prodSourceLabel = "user"
    spec.maxCpuCount = 60
    status, submitted = Client.submitJobs([spec])
    print(json.dumps([status, submitted[0][0]]))
else:
    status, [job] = Client.getJobStatus([int(sys.argv[2])])
    print(json.dumps([status, job.jobStatus, job.computingSite, job.transExitCode]))
"""


def test_a_job_the_real_client_submits_is_run_by_the_real_panda_pilot_and_shows_finished(
    live_server, users, tmp_path
):
    from rest_framework.authtoken.models import Token

    from brokerage.topology_import import import_topology
    from core import gdpconfig
    from pilots import panda_pilots
    from simulation import panda_demo
    from simulation.demo import local_worker_node

    local_worker_node(live_server.url)
    import_topology(panda_demo.local_topology())
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    pilot_token = Token.objects.get_or_create(user=users["pilot"])[0].key
    queue = panda_demo.LOCAL_QUEUE
    env = client_environment(live_server.url, panda_token("alice"), tmp_path)

    def client(*args: str) -> list:
        return run_client(f"import sys; sys.argv[1:] = {list(args)!r}\n{FINISHED_SCRIPT}", env)

    status, panda_id = client("submit", queue)  # a PanDA queue: the job goes to its site
    assert status == 0
    assert Job.objects.get(pk=panda_id).sites == [panda_demo.LOCAL_SITE]
    run = panda_pilots.run_pilot(
        live_server.url, pilot_token, queue, heartbeat=10, timeout=110, lifetime=300
    )
    job = Job.objects.get(pk=panda_id)
    assert job.status == "finished", (job.status, job.status_reason, run.output.read_text()[-3000:])
    assert client("status", str(panda_id)) == [0, "finished", panda_demo.LOCAL_SITE, 0]
