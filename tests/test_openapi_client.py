"""A client generated from the served OpenAPI schema works against a live gridwms: built by
openapi-python-client (its own environment under .clients/, scripts/install_clients.sh) from
/api/schema/ fetched without a token, it lists jobs page by page with their count, reads one,
and reads a missing one as the documented error, each answer parsed into its generated model
(a field the schema types wrongly fails the parse)."""

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.test_openapi_schema import _Pilot

ROOT = Path(__file__).resolve().parents[1]
CLIENT_ENV = ROOT / ".clients" / "openapi-client" / "bin"
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (CLIENT_ENV / "openapi-python-client").exists(),
        reason="openapi-python-client is installed by `make clients`",
    ),
]
# text/plain (a JDL submission) as raw bytes: the generator has no text bodies of its own.
CONFIG = "post_hooks: []\ncontent_type_overrides:\n  text/plain: application/octet-stream\n"

PROGRAM = """
import json, sys
from urllib.parse import parse_qs, urlsplit

from gridwms_client import AuthenticatedClient
from gridwms_client.api.jobs import jobs_list, jobs_retrieve
from gridwms_client.models import Error, JobDetail, PaginatedJobList
from gridwms_client.types import UNSET

base_url, key = sys.argv[1:3]
out = {"pages": [], "jobs": []}
# Bearer for the list, Token for the rest: the two headers the API takes for a key.
client = AuthenticatedClient(base_url=base_url, token=key, prefix="Bearer")
cursor = UNSET
while True:
    page = jobs_list.sync_detailed(client=client, count=True, page_size=2, cursor=cursor)
    assert page.status_code == 200, page.content
    assert isinstance(page.parsed, PaginatedJobList), page.content
    out["pages"].append(page.parsed.count)
    for job in page.parsed.results:
        out["jobs"].append({
            "id": job.id,
            "status": job.status.value,
            "pilot": job.pilot,
            "grid_ce": job.grid_ce,
            "started": job.started and job.started.isoformat(),
            "ended": job.ended and job.ended.isoformat(),
        })
    if not page.parsed.next_:
        break
    cursor = parse_qs(urlsplit(page.parsed.next_).query)["cursor"][0]
client = AuthenticatedClient(base_url=base_url, token=key, prefix="Token")
one = jobs_retrieve.sync(client=client, id=out["jobs"][0]["id"])
assert isinstance(one, JobDetail), one
out["detail"] = {"id": one.id, "history": [h.to_status for h in one.history]}
missing = jobs_retrieve.sync_detailed(client=client, id=2**62)
assert missing.status_code == 404 and isinstance(missing.parsed, Error), missing.content
out["missing"] = missing.parsed.detail
print(json.dumps(out))
"""


def _generate(schema_url: str, where: Path) -> None:
    with urllib.request.urlopen(schema_url + "?format=json") as answer:  # no token
        (where / "schema.json").write_bytes(answer.read())
    (where / "config.yml").write_text(CONFIG)
    generated = subprocess.run(
        [
            CLIENT_ENV / "openapi-python-client",
            "generate",
            "--path",
            where / "schema.json",
            "--config",
            where / "config.yml",
            "--meta",
            "none",
            "--output-path",
            where / "gridwms_client",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=where,
    )
    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert "Warning" not in generated.stdout, generated.stdout  # every operation generated


def test_a_client_generated_from_the_schema_lists_jobs_and_parses_every_one(
    live_server, submit, users, tmp_path
):
    from rest_framework.authtoken.models import Token

    from matcher.models import Job

    jobs = {submit("alice", cpu_time=100, sites=["LCG.CERN.ch"]).pk for _ in "abc"}
    pilot = _Pilot(users["pilot"])
    ran = Job.objects.get(pk=pilot.take())
    killed, waiting = Job.objects.filter(pk__in=jobs - {ran.pk}).order_by("id")
    for status in ("starting", "running"):
        pilot.report(ran.pk, status)
    pilot.report(ran.pk, "finished", exit_code=0)
    key = Token.objects.get_or_create(user=users["alice"])[0].key
    _generate(f"{live_server.url}/api/schema/", tmp_path)
    kill = urllib.request.Request(
        f"{live_server.url}/api/v1/jobs/{killed.pk}/kill/",
        method="POST",
        headers={"Authorization": f"Token {key}"},
    )
    with urllib.request.urlopen(kill) as answer:
        assert answer.status == 200

    result = subprocess.run(
        [CLIENT_ENV / "python", "-c", PROGRAM, live_server.url, key],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    visible = list(Job.objects.visible_to(users["alice"]).order_by("-id"))
    assert [j["id"] for j in out["jobs"]] == [j.pk for j in visible]
    assert out["pages"] == [len(visible)] * len(out["pages"]) and len(out["pages"]) >= 2
    by_id = {j["id"]: j for j in out["jobs"]}
    assert by_id[ran.pk]["status"] == "finished" and by_id[ran.pk]["grid_ce"] == "ce504.cern.ch"
    pilot_id = Job.objects.get(pk=ran.pk).pilot_id
    assert pilot_id is not None and by_id[ran.pk]["pilot"] == pilot_id
    assert by_id[ran.pk]["started"] and by_id[ran.pk]["ended"]
    assert by_id[killed.pk]["status"] == "cancelled" and by_id[killed.pk]["started"] is None
    assert by_id[waiting.pk]["ended"] is None and by_id[waiting.pk]["pilot"] is None
    assert out["detail"]["id"] == visible[0].pk and out["detail"]["history"]
    assert out["missing"]
