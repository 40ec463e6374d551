import pytest

from core import gdpconfig
from core.cycles import run_cycle
from pilots.models import Pilot


@pytest.fixture
def piloted(submit):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    for _ in range(4):
        submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    run_cycle("director")
    return Pilot.objects.first()


def test_the_pilot_pages_show_summary_detail_and_director_decisions(client, users, piloted):
    client.force_login(users["admin"])
    html = client.get("/pilots/").content.decode()
    assert ("Per site and CE" in html and "ce503.cern.ch" in html) or "ce504.cern.ch" in html
    detail = client.get(f"/pilots/{piloted.pk}/").content.decode()
    assert piloted.reference in detail and "TaskQueueID" in detail
    director = client.get("/pilots/director/")
    assert director.status_code == 200
    assert "plotly-graph-div" in director.content.decode()
    assert director.context["page"].rows[0].submitted > 0


def test_a_user_sees_no_pilot_of_others(client, users, piloted):
    client.force_login(users["bob"])
    assert client.get(f"/pilots/{piloted.pk}/").status_code == 404
    assert client.get("/pilots/").context["page"].rows == []


def test_the_pilots_api_lists_pilots_for_staff_and_their_credential(api, users, piloted):
    assert len(api(users["admin"]).get("/api/v1/pilots/").data["results"]) >= 1
    assert len(api(users["pilot"]).get("/api/v1/pilots/").data["results"]) >= 1
    assert api(users["bob"]).get("/api/v1/pilots/").data["results"] == []


def test_a_pilot_reports_its_status_and_a_wrong_transition_conflicts(api, users, piloted):
    pilot = api(users["pilot"])
    r = pilot.post(f"/api/v1/pilots/{piloted.pk}/status/", {"status": "Running"}, format="json")
    assert r.status_code == 200 and r.data["status"] == "Running"
    r = pilot.post(f"/api/v1/pilots/{piloted.pk}/status/", {"status": "Done"}, format="json")
    assert r.status_code == 200
    r = pilot.post(f"/api/v1/pilots/{piloted.pk}/status/", {"status": "Running"}, format="json")
    assert r.status_code == 409
    r = pilot.post(f"/api/v1/pilots/{piloted.pk}/status/", {"status": "Flying"}, format="json")
    assert r.status_code == 400 and "status" in r.data
    piloted.refresh_from_db()
    assert [h.to_status for h in piloted.history.all()] == ["Submitted", "Running", "Done"]


def test_another_credential_cannot_report_for_a_pilot(api, users, piloted):
    r = api(users["alice"]).post(
        f"/api/v1/pilots/{piloted.pk}/status/", {"status": "Running"}, format="json"
    )
    assert r.status_code in (403, 404)


def test_a_pilot_reports_only_on_its_own_jobs(api, users, submit):
    job = submit("alice", cpu_time=100)
    pilot = api(users["pilot"])
    reg = pilot.post("/api/v1/pilots/", {"reference": "p-1", "site": "LCG.CERN.ch"}, format="json")
    assert reg.status_code == 201
    body = {"site": "LCG.CERN.ch", "cpu_time": 1000, "pilot_reference": "p-1"}
    assert pilot.post("/api/v1/match/", body, format="json").data["id"] == job.pk
    ok = {"status": "running", "pilot_reference": "p-1"}
    assert pilot.post(f"/api/v1/jobs/{job.pk}/status/", ok, format="json").status_code == 200
    wrong = {"status": "finished", "pilot_reference": "p-2"}
    assert pilot.post(f"/api/v1/jobs/{job.pk}/status/", wrong, format="json").status_code == 403
    # Same reference, another credential: refused too.
    stolen = api(users["alice"]).post(
        f"/api/v1/jobs/{job.pk}/status/",
        {"status": "finished", "pilot_reference": "p-1"},
        format="json",
    )
    assert stolen.status_code == 403
    back = {"status": "starting", "pilot_reference": "p-1"}
    assert pilot.post(f"/api/v1/jobs/{job.pk}/status/", back, format="json").status_code == 409
    beat = pilot.post(
        f"/api/v1/jobs/{job.pk}/heartbeat/", {"pilot_reference": "p-1"}, format="json"
    )
    assert beat.status_code == 204
    job.refresh_from_db()
    assert job.status == "running" and job.heartbeat is not None


def test_another_credentials_identical_reference_registers_its_own_pilot(api, users):
    body = {"reference": "p-9", "site": "LCG.CERN.ch"}
    theirs = api(users["pilot"]).post("/api/v1/pilots/", body, format="json")
    mine = api(users["alice"]).post("/api/v1/pilots/", body, format="json")
    assert (theirs.status_code, mine.status_code) == (201, 201)
    assert mine.data["id"] != theirs.data["id"]
    again = api(users["alice"]).post("/api/v1/pilots/", body, format="json")
    assert again.status_code == 200 and again.data["id"] == mine.data["id"]
