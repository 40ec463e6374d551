"""DiracX's status updates, identity and discovery on gridwms (api/diracx/), and the credentials
file `manage.py diracx_credentials` writes for DiracX's command line."""

import json
import stat
import time

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

NOW = "2026-12-07T12:00:00+00:00"
SITE = "LCG.CERN.ch"


def dirac(user) -> APIClient:
    client = APIClient()
    key = Token.objects.get_or_create(user=user)[0].key
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _patch(client, body, query=""):
    return client.patch(f"/api/jobs/status{query}", body, format="json")


def _update(job_id, status=None, **fields):
    update = {"Status": status, **fields} if status else fields
    return {str(job_id): {NOW: update}}


# --- status updates ------------------------------------------------------------------------------


def test_the_owner_kills_a_job_by_setting_it_killed(users, submit):
    job = submit("alice")
    answer = _patch(dirac(users["alice"]), _update(job.pk, "Killed", Source="dirac"))
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["failed"] == {}
    assert body["success"][str(job.pk)]["Status"] == "Killed"
    job.refresh_from_db()
    assert job.status == "cancelled"
    assert job.history.last().reason == "killed by alice"


def test_bob_cannot_kill_alices_job_and_is_told_so_in_failed(users, submit):
    job = submit("alice")
    answer = _patch(dirac(users["bob"]), _update(job.pk, "Killed"))
    assert answer.status_code == 200
    assert answer.json() == {
        "success": {},
        "failed": {str(job.pk): {"detail": "not a job you may act on"}},
    }
    job.refresh_from_db()
    assert job.status == "activated"


def test_a_kill_the_lifecycle_refuses_goes_into_failed_with_its_reason(users, submit):
    job = submit("alice")
    alice = dirac(users["alice"])
    assert _patch(alice, _update(job.pk, "Killed")).json()["success"]
    again = _patch(alice, _update(job.pk, "Killed")).json()
    assert again["success"] == {}
    assert again["failed"][str(job.pk)]["detail"].startswith("cannot be killed")


def test_a_waiting_job_is_not_rescheduled_and_failed_says_why(users, submit):
    job = submit("alice")
    answer = _patch(dirac(users["alice"]), _update(job.pk, "Rescheduled")).json()
    assert answer["success"] == {}
    assert "rescheduled" in answer["failed"][str(job.pk)]["detail"]


def test_a_user_cannot_report_its_job_done_only_its_pilot_can(users, submit):
    job = submit("alice")
    answer = _patch(dirac(users["alice"]), _update(job.pk, "Done")).json()
    assert answer["failed"] == {str(job.pk): {"detail": "only the job's own pilot reports it Done"}}
    job.refresh_from_db()
    assert job.status == "activated"


def test_a_status_no_client_sets_and_a_missing_status_go_into_failed(users, submit):
    one, two = submit("alice"), submit("alice")
    body = {**_update(one.pk, "Matched"), **_update(two.pk, ApplicationStatus="half way")}
    failed = _patch(dirac(users["alice"]), body).json()["failed"]
    assert failed[str(one.pk)]["detail"] == "gridwms does not take Status Matched from a client"
    assert failed[str(two.pk)]["detail"].startswith("no Status")


def test_the_jobs_pilot_reports_it_running_then_done_with_its_application_status(users, submit):
    job = submit("alice", sites=[SITE])
    pilot = APIClient()
    pilot.force_authenticate(users["pilot"])
    assert pilot.post("/api/v1/pilots/", {"reference": "dx-1", "site": SITE}).status_code == 201
    body = {"site": SITE, "cpu_time": 86400, "pilot_reference": "dx-1"}
    assert pilot.post("/api/v1/match/", body, format="json").data["id"] == job.pk
    as_pilot = dirac(users["pilot"])
    running = _patch(as_pilot, _update(job.pk, "Running", MinorStatus="Application"))
    assert running.json()["success"][str(job.pk)]["Status"] == "Running", running.content
    updates = {
        "2026-12-07T12:05:00+00:00": {"Status": "Done", "MinorStatus": "Execution Complete"},
        "2026-12-07T12:04:00+00:00": {"Status": "Completing", "ApplicationStatus": "all events"},
    }
    done = _patch(as_pilot, {str(job.pk): updates}).json()
    assert done["success"][str(job.pk)] == {
        "Status": "Done",
        "MinorStatus": "Execution Complete",
        "ApplicationStatus": "all events",
        "LastUpdateTime": done["success"][str(job.pk)]["LastUpdateTime"],
    }
    job.refresh_from_db()
    assert (job.status, job.application_status) == ("finished", "all events")
    # Another job's pilot credential, or its owner, reports nothing on it.
    assert _patch(dirac(users["bob"]), _update(job.pk, "Failed")).json()["success"] == {}


@pytest.mark.parametrize(
    ("body", "query", "named"),
    [
        ([1], "", "body: must be an object"),
        ({}, "", "body: must be an object"),
        ({"abc": {NOW: {"Status": "Killed"}}}, "", "body: 'abc' is not a job id"),
        ({"0": {NOW: {"Status": "Killed"}}}, "", "body: '0' is not a job id"),
        ({"1": []}, "", "1: must be an object"),
        ({"1": {"yesterday": {"Status": "Killed"}}}, "", "1.yesterday: not an ISO 8601"),
        ({"1": {"2026-12-07T12:00:00": {"Status": "Killed"}}}, "", "1.2026-12-07T12:00:00: n"),
        ({"1": {"2026-02-30T12:00:00Z": {"Status": "Killed"}}}, "", "1.2026-02-30T12:00:00Z: n"),
        ({"1": {NOW: {"Status": "killed"}}}, "", f"1.{NOW}.Status: 'killed' is not a DIRAC"),
        ({"1": {NOW: {"Status": 3}}}, "", f"1.{NOW}.Status: must be a string"),
        ({"1": {NOW: {"MinorStatus": "a\x00b"}}}, "", f"1.{NOW}.MinorStatus: must not hold a NUL"),
        ({"1": {NOW: {"Colour": "red"}}}, "", f"1.{NOW}.Colour: unknown field"),
        ({"1": {NOW: {"Status": "Killed"}}}, "?force=true", "force:"),
    ],
)
def test_a_malformed_status_update_is_a_400_naming_the_field(users, body, query, named):
    answer = _patch(dirac(users["alice"]), body, query)
    assert answer.status_code == 400, answer.content
    assert answer.json()["detail"].startswith(named), answer.json()


# --- identity and discovery ----------------------------------------------------------------------


def test_whoami_names_the_user_its_group_vo_and_properties(users):
    answer = dirac(users["erin"]).get("/api/auth/userinfo")
    assert answer.status_code == 200
    assert answer.json() == {
        "sub": str(users["erin"].pk),
        "vo": settings.GRID_VO,
        "dirac_group": "lhcb_mc",
        "policies": {},
        "properties": ["JobSharing", "NormalUser", "ProductionManagement"],
        "preferred_username": "erin",
    }
    admin = dirac(users["admin"]).get("/api/auth/userinfo").json()
    assert "JobAdministrator" in admin["properties"]
    assert APIClient().get("/api/auth/userinfo").status_code == 401


def test_a_signed_bearer_token_works_as_well_as_an_api_token_key(users):
    from api.core import tokens

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens.issue(users['bob'])}")
    assert client.get("/api/auth/userinfo").json()["preferred_username"] == "bob"


def test_discovery_answers_anyone_even_with_a_bad_token_naming_the_token_endpoint(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer not-a-key")
    answer = client.get("/.well-known/openid-configuration")
    assert answer.status_code == 200
    document = answer.json()
    assert document["token_endpoint"] == "http://testserver/api/auth/token"
    assert document["issuer"] == "http://testserver/"
    for key in ("userinfo_endpoint", "device_authorization_endpoint", "jwks_uri"):
        assert document[key].startswith("http://testserver/")
    # A browser without a session is not sent to the login page either.
    assert APIClient().get("/.well-known/openid-configuration", HTTP_ACCEPT="text/html").json()


def test_diracxs_endpoints_are_not_in_gridwmss_own_schema(users):
    client = APIClient()
    client.force_authenticate(users["alice"])
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    paths = set(json.loads(response.content)["paths"])
    assert "/api/v1/jobs/" in paths
    assert not [p for p in paths if p.startswith(("/api/jobs", "/api/auth", "/.well-known"))]


def test_a_session_client_must_send_its_csrf_token_a_token_client_need_not(users, submit):
    job = submit("alice")
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(users["alice"])
    refused = _patch(browser, _update(job.pk, "Killed"))
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert _patch(dirac(users["alice"]), _update(job.pk, "Killed")).status_code == 200


# --- the credentials file ------------------------------------------------------------------------


def test_the_credentials_command_writes_the_users_token_for_diracxs_client(users, tmp_path):
    path = tmp_path / "nested" / "credentials.json"
    call_command("diracx_credentials", "alice", "--output", str(path))
    content = json.loads(path.read_text())
    assert content["access_token"] == Token.objects.get(user=users["alice"]).key
    assert content["expires_on"] > time.time() + 365 * 24 * 3600
    assert content["refresh_token"] == ""
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_credentials_command_goes_where_diracx_credentials_path_says(
    users, tmp_path, monkeypatch
):
    Token.objects.filter(user=users["bob"]).delete()
    path = tmp_path / "bob.json"
    monkeypatch.setenv("DIRACX_CREDENTIALS_PATH", str(path))
    call_command("diracx_credentials", "bob")
    assert json.loads(path.read_text())["access_token"] == Token.objects.get(user=users["bob"]).key


def test_the_credentials_command_refuses_an_unknown_or_inactive_user(users, tmp_path):
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("diracx_credentials", "nobody", "--output", str(tmp_path / "x"))
    users["bob"].is_active = False
    users["bob"].save()
    with pytest.raises(CommandError, match="not active"):
        call_command("diracx_credentials", "bob", "--output", str(tmp_path / "x"))
    assert not (tmp_path / "x").exists()
