"""PanDA's client's job API (api/panda_client): job/submit, job/get_description, job/kill and
system/is_alive in PanDA's envelope, authenticated by signed Bearer tokens, over real HTTP
requests through the whole middleware stack. The real client library drives the same endpoints
in tests/test_panda_client_live.py."""

import json
import subprocess
import time
from io import StringIO
from pathlib import Path

import jwt
import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.urls import resolve
from rest_framework.test import APIClient

from api.core import tokens
from api.panda_client import views
from api.panda_client.jobspec import ATTRIBUTES
from core import gdpconfig
from matcher.models import Job

ROOT = Path(__file__).resolve().parents[1]
CLIENT_PYTHON = ROOT / ".clients" / "panda-client" / "bin" / "python"
SITE = "LCG.CERN.ch"

pytestmark = pytest.mark.django_db


def panda_job(**values) -> list:
    """A job as pandaclient's MiscUtils.dump_jobs_json writes it: every JobSpec attribute in
    order ("NULL" when not set), then its files."""
    unknown = set(values) - set(ATTRIBUTES)
    assert not unknown, unknown
    return [values.get(name, "NULL") for name in ATTRIBUTES] + [[]]


def echo_job(**values) -> list:
    return panda_job(
        **{
            "jobName": "echo",
            "transformation": "/bin/echo",
            "jobParameters": "hello",
            "computingSite": SITE,
            "prodSourceLabel": "user",
            **values,
        }
    )


def bearer(user, **kwargs) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens.issue(user, **kwargs)}")
    return client


def post(client, path: str, body, **extra):
    return client.post(f"/api/v1/{path}", body, format="json", **extra)


def submit(client, *jobs):
    return post(client, "job/submit", {"jobs": json.dumps(list(jobs))})


def submitted_ids(response) -> list[int]:
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["success"] is True, body
    return [entry[0] for entry in body["data"]]


# --- the job API -------------------------------------------------------------------------------


def test_is_alive_answers_in_pandas_envelope_without_a_token(db):
    response = APIClient().get("/api/v1/system/is_alive")
    assert response.status_code == 200
    assert response.json() == {"success": True, "message": "alive=yes", "data": None}


def test_a_submitted_jobspec_becomes_an_activated_job_with_its_fields_mapped(users):
    job = echo_job(
        jobName="my echo",
        jobParameters='hello "big world"',
        maxCpuCount=7200,
        coreCount=4,
        currentPriority=900,
        jobsetID=12,
        jobDefinitionID=5,
    )
    response = submit(bearer(users["alice"]), job)
    [pk] = submitted_ids(response)
    # PanDA's answer for an analysis job: [PandaID, jobDefinitionID, {"jobsetID": ...}].
    assert response.json()["data"] == [[pk, 5, {"jobsetID": 12}]]
    stored = Job.objects.get(pk=pk)
    assert stored.owner == users["alice"]
    assert stored.owner_group.name == "lhcb_user"
    assert stored.status == "activated"
    assert stored.name == "my echo"
    assert stored.executable == "/bin/echo"
    assert stored.arguments == ["hello", "big world"]
    assert stored.sites == [SITE]
    assert stored.cpu_time == 7200
    assert {"MultiProcessor", "4Processors"} <= set(stored.tags)
    assert stored.current_priority == 900
    assert "prodSourceLabel" in stored.jdl


def test_a_jobspec_without_maxcpucount_gets_an_hour_and_a_production_job_its_name_back(users):
    # carol belongs to lhcb_user and lhcb_mc; lhcb_mc has ProductionManagement.
    job = echo_job(jobName="mc", prodSourceLabel="managed", workingGroup="lhcb_mc")
    response = submit(bearer(users["carol"]), job)
    [pk] = submitted_ids(response)
    assert response.json()["data"] == [[pk, None, "mc"]]
    stored = Job.objects.get(pk=pk)
    assert (stored.owner_group.name, stored.cpu_time) == ("lhcb_mc", 3600)


def test_a_submission_is_all_or_nothing(users):
    before = Job.objects.count()
    response = submit(bearer(users["alice"]), echo_job(), echo_job(computingSite="No.Such.site"))
    assert response.status_code == 400
    assert response.json()["data"] == {"field": "computingSite", "job": 1}
    assert Job.objects.count() == before


def test_get_description_gives_own_jobs_as_jobspecs_and_none_for_others_and_unknown(users):
    [mine] = submitted_ids(submit(bearer(users["alice"]), echo_job(coreCount=4)))
    [bobs] = submitted_ids(submit(bearer(users["bob"]), echo_job()))
    alice = bearer(users["alice"])
    response = post(alice, "job/get_description", {"job_ids": [mine, bobs, 999999]})
    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    described, other, unknown = body["data"]
    assert (other, unknown) == (None, None)
    assert set(ATTRIBUTES) <= set(described)
    assert described["PandaID"] == mine
    assert described["jobStatus"] == "activated"
    assert described["prodSourceLabel"] == "user"
    assert described["coreCount"] == 4
    assert described["computingSite"] == SITE
    assert described["prodUserName"] == "alice"
    assert described["workingGroup"] == "lhcb_user"
    assert set(described["creationTime"]) == {"__datetime__"}  # the client reads a datetime


def test_get_description_takes_the_ids_as_a_query_too(users):
    [mine] = submitted_ids(submit(bearer(users["alice"]), echo_job()))
    response = bearer(users["alice"]).get(f"/api/v1/job/get_description?job_ids={mine}")
    assert response.status_code == 200
    assert [j["PandaID"] for j in response.json()["data"]] == [mine]


def test_kill_kills_own_jobs_and_answers_false_for_others_and_unknown(users):
    [mine] = submitted_ids(submit(bearer(users["alice"]), echo_job()))
    [bobs] = submitted_ids(submit(bearer(users["bob"]), echo_job()))
    response = post(bearer(users["alice"]), "job/kill", {"job_ids": [mine, bobs, 999999]})
    assert response.status_code == 200
    assert response.json()["data"] == [True, False, False]
    assert Job.objects.get(pk=mine).status == "cancelled"
    assert Job.objects.get(pk=bobs).status == "activated"
    # Killed already: the lifecycle refuses it again.
    again = post(bearer(users["alice"]), "job/kill", {"job_ids": [mine]})
    assert again.json()["data"] == [False]


def test_a_member_of_a_jobsharing_group_sees_and_kills_its_jobs(users):
    # lhcb_mc has JobSharing: carol, a member, may act on erin's lhcb_mc jobs.
    job = echo_job(prodSourceLabel="managed")
    [erins] = submitted_ids(submit(bearer(users["erin"]), job))
    carol = bearer(users["carol"])
    described = post(carol, "job/get_description", {"job_ids": [erins]}).json()["data"]
    assert described[0]["PandaID"] == erins
    assert post(carol, "job/kill", {"job_ids": [erins]}).json()["data"] == [True]
    assert Job.objects.get(pk=erins).status == "cancelled"


def test_a_user_of_several_groups_names_the_workinggroup(users):
    response = submit(bearer(users["carol"]), echo_job())
    assert response.status_code == 400
    assert response.json()["data"]["field"] == "workingGroup"
    assert "lhcb_mc, lhcb_user" in response.json()["message"]


# --- refusals: 4xx naming the field, in PanDA's envelope ---------------------------------------

BAD_JOBS = [
    ({"jobName": "a\x00b"}, "jobName"),
    ({"transformation": "/bin/e\x00cho"}, "transformation"),
    ({"transformation": "NULL"}, "transformation"),
    ({"jobParameters": "a\x00b"}, "jobParameters"),
    ({"jobParameters": 'say "unbalanced'}, "jobParameters"),
    ({"maxCpuCount": 31_536_001}, "maxCpuCount"),
    ({"maxCpuCount": -1}, "maxCpuCount"),
    ({"maxCpuCount": "lots"}, "maxCpuCount"),
    ({"maxCpuCount": [1]}, "maxCpuCount"),
    ({"coreCount": -2}, "coreCount"),
    ({"coreCount": True}, "coreCount"),
    ({"currentPriority": 10**12}, "currentPriority"),
    ({"computingSite": "No.Such.site"}, "computingSite"),
    ({"computingSite": 7}, "computingSite"),
    ({"workingGroup": "lhcb_mc"}, "workingGroup"),  # alice is not a member
    ({"workingGroup": "no_such_group"}, "workingGroup"),
    ({"prodSourceLabel": "bogus"}, "prodSourceLabel"),
    ({"prodSourceLabel": "managed"}, "prodSourceLabel"),  # lhcb_user is not production
    ({"jobsetID": "x\x00"}, "jobsetID"),
]


@pytest.mark.parametrize(("values", "field"), BAD_JOBS)
def test_a_bad_jobspec_answers_400_naming_its_attribute(users, values, field):
    response = submit(bearer(users["alice"]), echo_job(**values))
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["success"] is False
    assert body["data"] == {"field": field, "job": 0}
    assert f"jobs[0].{field}:" in body["message"]
    assert not Job.objects.filter(owner=users["alice"]).exists()


BAD_BODIES = [
    ("job/submit", [1, 2], "body"),
    ("job/submit", {}, "jobs"),
    ("job/submit", {"jobs": "[[not json"}, "jobs"),
    ("job/submit", {"jobs": "\x00"}, "jobs"),
    ("job/submit", {"jobs": "{}"}, "jobs"),
    ("job/submit", {"jobs": "[]"}, "jobs"),
    ("job/submit", {"jobs": json.dumps([["NULL"] * 5])}, "jobs"),
    ("job/submit", {"jobs": json.dumps([[*panda_job()[:-1], "files"]])}, "Files"),
    ("job/get_description", {}, "job_ids"),
    ("job/get_description", {"job_ids": "1"}, "job_ids"),
    ("job/get_description", {"job_ids": ["one"]}, "job_ids"),
    ("job/get_description", {"job_ids": ["1\x00"]}, "job_ids"),
    ("job/get_description", {"job_ids": [-3]}, "job_ids"),
    ("job/get_description", {"job_ids": [2**70]}, "job_ids"),
    ("job/kill", {"job_ids": [True]}, "job_ids"),
    ("job/kill", {"job_ids": [1], "code": "nine"}, "code"),
]


@pytest.mark.parametrize(("path", "body", "field"), BAD_BODIES)
def test_a_bad_request_answers_400_naming_its_field(users, path, body, field):
    response = post(bearer(users["alice"]), path, body)
    assert response.status_code == 400, response.content
    assert response.json()["success"] is False
    assert response.json()["data"]["field"] == field
    assert field in response.json()["message"]


def test_a_body_that_is_not_json_answers_400_in_the_envelope(users):
    response = bearer(users["alice"]).post(
        "/api/v1/job/submit", b'{"jobs": [', content_type="application/json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["success"] is False and body["data"] is None
    assert "JSON" in body["message"]


def test_more_jobs_than_maxjobspersubmission_are_refused_naming_jobs(users):
    gdpconfig.set_value("MaxJobsPerSubmission", 2)
    response = submit(bearer(users["alice"]), echo_job(), echo_job(), echo_job())
    assert response.status_code == 400
    assert response.json()["data"]["field"] == "jobs"
    assert "MaxJobsPerSubmission" in response.json()["message"]


# --- authentication ----------------------------------------------------------------------------


def _claims(user, lifetime: int) -> dict:
    now = int(time.time())
    return {
        "iss": django_settings.JWT_ISSUER,
        "aud": tokens.AUDIENCE,
        "sub": str(user.pk),
        "preferred_username": user.username,
        "iat": now,
        "exp": now + lifetime,
    }


def refused_tokens(user) -> dict[str, str]:
    return {
        "expired": tokens.issue(user, lifetime_seconds=-10),
        "signed with another key": jwt.encode(_claims(user, 600), "another key " * 4, "HS256"),
        "garbage": "not-a-token",
        "garbage with dots": "a.b.c",
    }


def test_an_expired_foreign_or_garbage_token_answers_401_in_the_envelope(users):
    for what, token in refused_tokens(users["alice"]).items():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        response = post(client, "job/get_description", {"job_ids": [1]})
        assert response.status_code == 401, what
        assert response.headers["WWW-Authenticate"].startswith("Bearer"), what
        assert response.json()["success"] is False, what
        assert response.json()["message"], what


def test_a_good_token_authenticates_as_its_user(users):
    response = post(bearer(users["alice"]), "job/get_description", {"job_ids": [1]})
    assert response.status_code == 200
    assert response.json() == {"success": True, "message": "", "data": [None]}


def test_an_inactive_users_token_is_refused(users):
    client = bearer(users["alice"])
    users["alice"].is_active = False
    users["alice"].save()
    assert post(client, "job/get_description", {"job_ids": [1]}).status_code == 401


def test_no_token_answers_401_not_a_login_redirect(db):
    response = post(APIClient(), "job/submit", {"jobs": "[]"})
    assert response.status_code == 401
    assert response.json()["success"] is False


def test_a_token_client_needs_no_csrf_token(users):
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens.issue(users['alice'])}")
    assert submitted_ids(submit(client, echo_job()))


# --- the command, the routes, the schema, the pinned JobSpec -----------------------------------


def test_panda_token_prints_a_signed_token_of_the_users_name_and_groups(users):
    out = StringIO()
    call_command("panda_token", "carol", "--lifetime", "120", stdout=out)
    claims = tokens.verify(out.getvalue().strip())
    assert claims["preferred_username"] == "carol"
    assert claims["groups"] == ["lhcb_mc", "lhcb_user"]
    assert claims["exp"] - claims["iat"] == 120


@pytest.mark.parametrize(
    ("args", "message"),
    [(["nobody"], "no user named"), (["alice", "--lifetime", "0"], "--lifetime")],
)
def test_panda_token_refuses_an_unknown_user_or_a_lifetime_out_of_bounds(users, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("panda_token", *args, stdout=StringIO())


def test_pandas_paths_resolve_to_their_views_and_gridwms_routes_keep_theirs():
    assert resolve("/api/v1/job/submit").func.view_class is views.SubmitView
    assert resolve("/api/v1/job/kill").func.view_class is views.KillView
    assert resolve("/api/v1/system/is_alive").func.view_class is views.IsAliveView
    assert resolve("/api/v1/jobs/").func.cls.__name__ == "JobViewSet"
    assert resolve("/api/v1/jobs/7/kill/").func.cls.__name__ == "JobViewSet"


def test_pandas_endpoints_are_left_out_of_the_openapi_schema(users, api):
    response = api(users["alice"]).get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    paths = set(json.loads(response.content)["paths"])
    assert "/api/v1/jobs/" in paths  # the schema was read
    assert not [p for p in paths if p.startswith(("/api/v1/job/", "/api/v1/system/"))]


def test_the_pinned_jobspec_attributes_are_the_installed_clients():
    assert CLIENT_PYTHON.exists(), "PanDA's client is missing: run `make install`"
    out = subprocess.run(
        [
            str(CLIENT_PYTHON),
            "-c",
            "import json; from pandaclient.JobSpec import JobSpec; "
            "print(json.dumps(JobSpec._attributes))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert tuple(json.loads(out.stdout)) == ATTRIBUTES


def test_a_computingsite_naming_a_panda_queue_sends_the_job_to_its_site(users, panda):
    from brokerage.models import PandaQueue

    queue = PandaQueue.objects.select_related("site").order_by("name").first()
    assert queue.name != queue.site.name
    [pk] = submitted_ids(submit(bearer(users["alice"]), echo_job(computingSite=queue.name)))
    assert Job.objects.get(pk=pk).sites == [queue.site.name]


def test_a_token_naming_one_of_the_users_groups_chooses_the_jobs_group(users, settings):
    carol = users["carol"]
    claims = {**_claims(carol, 600), "groups": ["lhcb_mc"]}
    token = jwt.encode(claims, settings.JWT_SIGNING_KEY or settings.SECRET_KEY, "HS256")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    [pk] = submitted_ids(submit(client, echo_job()))
    assert Job.objects.get(pk=pk).owner_group.name == "lhcb_mc"
