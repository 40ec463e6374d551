"""PanDA's pilot protocol at panda-server's paths (/server/panda/getJob, updateJob, getStatus, and
the /cache/ queue descriptions), as PanDA's pilot sends it: form posts with a Bearer token.
Bad input answers 4xx naming the field; a pilot acts only on the jobs its credential claimed."""

import json
import shlex
from urllib.parse import urlencode

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from matcher.models import Job
from pilots import panda_launch
from pilots.models import PandaLogReport, Pilot

pytestmark = pytest.mark.django_db
QUEUE = "LOCAL_REAL_PILOTS"
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def queue(users):
    from brokerage.topology_import import import_topology
    from simulation import panda_demo
    from simulation.demo import local_worker_node

    local_worker_node("http://127.0.0.1:8000")
    import_topology(panda_demo.local_topology())
    return QUEUE


def bearer(user) -> APIClient:
    # CSRF checks on, as a browser's would be: a token client needs none.
    client = APIClient(enforce_csrf_checks=True)
    key = Token.objects.get_or_create(user=user)[0].key
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_ORIGIN="gridwms")
    return client


def post(client, path: str, **fields):
    return client.post(path, urlencode(fields), content_type=FORM, HTTP_ACCEPT="application/json")


def hello(api, users) -> int:
    answer = api(users["alice"]).post(
        "/api/v1/jobs/",
        {
            "executable": "/bin/echo",
            "arguments": ["hello world"],
            "environment": {"GREETING": "hi"},
            "cpu_time": 60,
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    return answer.json()["id"]


def get_job(client, reference="panda://test/1"):
    return post(
        client,
        "/server/panda/getJob",
        siteName=QUEUE,
        computingElement=QUEUE,
        prodSourceLabel="user",
        worker_id=reference,
    )


def test_an_anonymous_getjob_is_refused_401_not_sent_to_the_login_page(queue):
    answer = post(APIClient(), "/server/panda/getJob", siteName=QUEUE)
    assert answer.status_code == 401


def test_getjob_with_no_waiting_job_answers_statuscode_20(queue, users):
    answer = get_job(bearer(users["pilot"]))
    assert answer.status_code == 200
    assert answer.json() == {"StatusCode": 20}


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({}, "siteName"),
        ({"computingElement": "NO_SUCH_QUEUE"}, "computingElement"),
        ({"siteName": "NO_SUCH_QUEUE"}, "siteName"),
        ({"siteName": QUEUE, "worker_id": "x" * 300}, "worker_id"),
        ({"siteName": QUEUE, "prodSourceLabel": "bad\x00"}, "prodSourceLabel"),
    ],
)
def test_a_malformed_getjob_answers_400_naming_the_field(queue, users, fields, field):
    answer = post(bearer(users["pilot"]), "/server/panda/getJob", **fields)
    assert answer.status_code == 400, answer.content
    assert field in answer.json() and answer.json()["StatusCode"] == 30


def test_getjob_claims_a_waiting_job_for_the_pilot_and_describes_it_as_panda_server_does(
    queue, users, api
):
    job_id = hello(api, users)
    answer = get_job(bearer(users["pilot"]), "panda://test/abc")
    assert answer.status_code == 200, answer.content
    job = answer.json()
    assert job["StatusCode"] == 0 and job["PandaID"] == job_id
    # The runner is the job's one input file, with its size and adler32.
    assert job["transformation"] == job["inFiles"] == panda_launch.RUNNER_NAME
    assert job["fsize"] == str(len(panda_launch.RUNNER))
    assert job["checksum"] == f"ad:{panda_launch.adler32_of_bytes(panda_launch.RUNNER)}"
    assert shlex.split(job["jobPars"]) == ["env", "GREETING=hi", "/bin/echo", "hello world"]
    assert job["logFile"] == job["outFiles"] == f"gridwms.{job_id}.0.log.tgz"
    assert job["prodSourceLabel"] == "user" and job["attemptNr"] == 0
    assert job["ddmEndPointOut"] == "LOCAL_DATADISK" and job["coreCount"] == 1
    # Claimed through the native match, bound to the pilot record of that worker id.
    stored = Job.objects.get(pk=job_id)
    pilot = Pilot.objects.get(reference="panda://test/abc", credential_user=users["pilot"])
    assert stored.status == "sent" and stored.pilot_id == pilot.pk
    # The next pilot finds nothing.
    assert get_job(bearer(users["pilot"]), "panda://test/def").json() == {"StatusCode": 20}


@pytest.fixture
def claimed(queue, users, api) -> int:
    job_id = hello(api, users)
    assert get_job(bearer(users["pilot"])).json()["PandaID"] == job_id
    return job_id


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"state": "running"}, "jobId"),
        ({"jobId": "abc", "state": "running"}, "jobId"),
        ({"jobId": "-3", "state": "running"}, "jobId"),
        ({"jobId": "1"}, "state"),
        ({"jobId": "1", "state": "dancing"}, "state"),
        ({"jobId": "1", "state": "finished", "xml": "<not json>"}, "xml"),
        ({"jobId": "1", "state": "finished", "xml": '{"a": {"fsize": -1}}'}, "xml"),
        ({"jobId": "1", "state": "finished", "xml": '{"a": {"fsize": 1, "adler32": "zz"}}'}, "xml"),
        ({"jobId": "1", "state": "failed", "pilotErrorCode": "x"}, "pilotErrorCode"),
        ({"jobId": "1", "state": "running", "cpuConsumptionTime": "nan"}, "cpuConsumptionTime"),
    ],
)
def test_a_malformed_updatejob_answers_400_naming_the_field(claimed, users, fields, field):
    answer = post(bearer(users["pilot"]), "/server/panda/updateJob", **fields)
    assert answer.status_code == 400, answer.content
    assert field in answer.json()
    assert Job.objects.get(pk=claimed).status == "sent"  # nothing moved


def test_a_pilot_reports_only_on_the_jobs_its_credential_claimed(claimed, users):
    other = post(bearer(users["bob"]), "/server/panda/updateJob", jobId=claimed, state="failed")
    assert other.status_code == 403
    assert (
        post(bearer(users["bob"]), "/server/panda/getStatus", ids=claimed).json()["status"]
        == "notfound"
    )
    missing = post(bearer(users["pilot"]), "/server/panda/updateJob", jobId=999999, state="running")
    assert missing.status_code == 404
    assert Job.objects.get(pk=claimed).status == "sent"


def test_updatejob_moves_the_job_along_and_records_the_declared_log(claimed, users):
    pilot = bearer(users["pilot"])
    for state in ("starting", "running", "running"):
        answer = post(pilot, "/server/panda/updateJob", jobId=claimed, state=state)
        assert answer.json() == {"StatusCode": 0, "command": "NULL"}
    log = {f"gridwms.{claimed}.0.log.tgz": {"guid": "g", "fsize": 1234, "adler32": "0a0b0c0d"}}
    answer = post(
        pilot,
        "/server/panda/updateJob",
        jobId=claimed,
        state="finished",
        transExitCode=0,
        pilotErrorCode=0,
        cpuConsumptionTime="1.5",
        startTime="100.0",
        endTime="130.0",
        node="wn1",
        xml=json.dumps(log),
    )
    assert answer.json() == {"StatusCode": 0, "command": "NULL"}
    job = Job.objects.get(pk=claimed)
    assert [h.to_status for h in job.history.all()][-3:] == ["starting", "running", "finished"]
    assert (job.exit_code, job.cpu_seconds, job.wall_seconds, job.hostname) == (0, 1.5, 30.0, "wn1")
    report = PandaLogReport.objects.get(job_id=claimed)
    assert (report.name, report.size, report.adler32) == (
        f"gridwms.{claimed}.0.log.tgz",
        1234,
        "0a0b0c0d",
    )
    status = post(pilot, "/server/panda/getStatus", ids=claimed).json()
    assert status == {"StatusCode": 0, "status": "finished", "attemptNr": "0"}
    # A report on a job that ended is refused, 409, nothing moved.
    late = post(pilot, "/server/panda/updateJob", jobId=claimed, state="running")
    assert late.status_code == 409


def test_a_failed_report_fails_the_job_with_the_pilots_error_code(claimed, users):
    pilot = bearer(users["pilot"])
    post(pilot, "/server/panda/updateJob", jobId=claimed, state="running")
    answer = post(
        pilot,
        "/server/panda/updateJob",
        jobId=claimed,
        state="failed",
        pilotErrorCode=1149,
        pilotErrorDiag="Transform could not be downloaded",
        transExitCode=0,
    )
    assert answer.json()["StatusCode"] == 0
    job = Job.objects.get(pk=claimed)
    assert job.status == "failed" and job.error_code == 1149
    assert "1149" in job.status_reason


def test_a_job_killed_while_running_is_answered_tobekilled_and_the_pilots_end_acknowledges_it(
    claimed, users, api
):
    pilot = bearer(users["pilot"])
    post(pilot, "/server/panda/updateJob", jobId=claimed, state="running")
    assert api(users["alice"]).post(f"/api/v1/jobs/{claimed}/kill/").status_code == 200
    answer = post(pilot, "/server/panda/updateJob", jobId=claimed, state="running")
    assert answer.json() == {"StatusCode": 0, "command": "tobekilled"}
    ended = post(
        pilot,
        "/server/panda/updateJob",
        jobId=claimed,
        state="failed",
        pilotErrorCode=1144,
        pilotErrorDiag="This job was killed by panda server",
    )
    assert ended.json() == {"StatusCode": 0, "command": "NULL"}
    job = Job.objects.get(pk=claimed)
    assert job.status == "cancelled" and not job.kill_requested and job.error_code == 1144


def test_the_queue_description_comes_from_the_panda_queue_and_its_storages(queue, users):
    pilot = bearer(users["pilot"])
    data = pilot.get(f"/cache/schedconfig/{QUEUE}.all.json").json()
    assert data["nickname"] == data["panda_resource"] == QUEUE
    assert data["state"] == "ACTIVE" and data["atlas_site"] == "DIRAC.Local.ch"
    assert data["acopytools"] == {"pr": ["mv"], "pw": ["mv"], "pl": ["mv"]}
    assert data["astorages"] == {"pw": ["LOCAL_DATADISK"], "pl": ["LOCAL_DATADISK"]}
    assert pilot.get(f"/cache/schedconfig/{QUEUE}.json").json() == {QUEUE: data}
    storages = pilot.get("/cache/ddmendpoints.json").json()
    assert storages["LOCAL_DATADISK"]["site"] == "DIRAC.Local.ch"
    unknown = pilot.get("/cache/schedconfig/NOPE.all.json")
    assert unknown.status_code == 400 and "queue" in unknown.json()
    assert APIClient().get(f"/cache/schedconfig/{QUEUE}.all.json").status_code == 401


def test_a_private_pilot_of_several_groups_names_its_group_as_panda_does_workinggroup(queue, users):
    carol = bearer(users["carol"])  # lhcb_user and lhcb_mc
    answer = post(carol, "/server/panda/getJob", siteName=QUEUE)
    assert answer.status_code == 400 and "workingGroup" in answer.json()
    chosen = post(carol, "/server/panda/getJob", siteName=QUEUE, workingGroup="lhcb_mc")
    assert chosen.json() == {"StatusCode": 20}
