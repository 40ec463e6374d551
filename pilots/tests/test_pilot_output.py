"""What a pilot tells of itself: its worker node at registration and its log lines through
POST /api/v1/pilots/{id}/log/, kept bounded, shown on the pilot page; only its own credential
writes them. And the error codes the pilot client gives itself and the server's table."""

import pytest

from matcher import errors
from pilots import output
from pilots.client.payload import Outcome
from pilots.models import Pilot, PilotLogLine

pytestmark = pytest.mark.django_db

NODE = {"cores": 16, "memory_mb": 32000, "os": "el9", "pilot_version": "3.9"}


@pytest.fixture
def registered(api, users):
    body = {"reference": "pilot://ce/1", "site": "LCG.CERN.ch", "ce": "ce504.cern.ch"}
    r = api(users["pilot"]).post(
        "/api/v1/pilots/", {**body, "hostname": "wn017.cern.ch", "node": NODE}, format="json"
    )
    assert r.status_code == 201, r.content
    return Pilot.objects.get(pk=r.json()["id"])


def test_a_pilot_registers_with_its_worker_node_which_the_api_and_page_show(
    registered, api, users, client
):
    assert (registered.hostname, registered.node) == ("wn017.cern.ch", NODE)
    got = api(users["admin"]).get(f"/api/v1/pilots/{registered.pk}/").json()
    assert (got["hostname"], got["node"]["cores"]) == ("wn017.cern.ch", 16)
    client.force_login(users["admin"])
    html = client.get(f"/pilots/{registered.pk}/").content.decode()
    assert '<dd id="pilot-hostname">wn017.cern.ch</dd>' in html
    assert 'id="pilot-log-empty"' in html


def test_a_node_description_is_kept_as_plain_values_without_nul_characters(registered):
    output.set_node(registered.pk, "wn1", {"os": "el\x009", "cores": 8, "big": 2**60, "x": None})
    registered.refresh_from_db()
    assert registered.node == {"os": "el9", "cores": 8, "big": str(2**60)}


def test_a_node_description_that_nests_or_is_too_big_is_refused_naming_the_field(api, users):
    body = {"reference": "pilot://ce/2", "site": "LCG.CERN.ch", "node": {"cpu": {"a": 1}}}
    r = api(users["pilot"]).post("/api/v1/pilots/", body, format="json")
    assert r.status_code == 400 and "node" in r.json()
    body["node"] = {f"k{i}": i for i in range(output.NODE_KEYS + 1)}
    assert api(users["pilot"]).post("/api/v1/pilots/", body, format="json").status_code == 400
    assert not Pilot.objects.filter(reference="pilot://ce/2").exists()


def test_the_pilot_posts_its_log_lines_and_the_pilot_page_shows_them(
    registered, api, users, client
):
    lines = [
        {"message": "matched job 5", "job_id": 5},
        {"level": "ERROR", "message": "job 5: stage-in failed", "job_id": 5},
        {"message": "ending Done"},
    ]
    r = api(users["pilot"]).post(
        f"/api/v1/pilots/{registered.pk}/log/", {"lines": lines}, format="json"
    )
    assert r.status_code == 201 and r.json() == {"lines": 3}
    got = api(users["admin"]).get(f"/api/v1/pilots/{registered.pk}/log/").json()
    assert [(g["level"], g["job_id"], g["message"]) for g in got] == [
        ("INFO", 5, "matched job 5"),
        ("ERROR", 5, "job 5: stage-in failed"),
        ("INFO", None, "ending Done"),
    ]
    client.force_login(users["admin"])
    html = client.get(f"/pilots/{registered.pk}/").content.decode()
    assert "<code>job 5: stage-in failed</code>" in html
    assert '<span class="status failed">ERROR</span>' in html


def test_only_the_pilots_own_credential_writes_its_log_and_bad_lines_are_refused(
    registered, api, users
):
    url = f"/api/v1/pilots/{registered.pk}/log/"
    one = {"lines": [{"message": "hello"}]}
    assert api(users["alice"]).post(url, one, format="json").status_code == 404  # not hers
    pilot = api(users["pilot"])
    bad_level = {"lines": [{"message": "x", "level": "LOUD"}]}
    assert "lines" in pilot.post(url, bad_level, format="json").json()
    many = {"lines": [{"message": "x"}] * (output.MAX_LINES_PER_REPORT + 1)}
    assert pilot.post(url, many, format="json").status_code == 400
    assert pilot.post(url, {"lines": []}, format="json").status_code == 400
    assert (
        pilot.post(url, {"lines": [{"message": "x"}], "more": 1}, format="json").status_code == 400
    )
    assert not PilotLogLine.objects.exists()


def test_a_pilots_log_keeps_only_its_last_lines(registered):
    output.record(registered.pk, [f"line {i}" for i in range(output.MAX_LINES + 30)])
    kept = output.lines_of(registered.pk)
    assert len(kept) == output.MAX_LINES
    assert (kept[0].message, kept[-1].message) == ("line 30", f"line {output.MAX_LINES + 29}")
    assert PilotLogLine.objects.filter(pilot=registered).count() == output.MAX_LINES


def test_the_pilot_client_reports_its_own_error_code_only_with_a_failure():
    failed = Outcome("failed", "input sandbox: bad checksum", error_code=1099)
    assert failed.report("p")["error_code"] == 1099
    assert "error_code" not in Outcome("finished", "exit code 0", exit_code=0).report("p")


@pytest.mark.parametrize(
    "exit_code, reason, reported, expected",
    [
        (3, "exit code 3", None, (1305, "payload")),
        (139, "exit code 139 (SIGSEGV)", None, (1203, "signal")),
        (143, "killed: over its wall-clock limit of 60 s", 1213, (1213, "wall time")),
        (0, "payload done", 1137, (1137, "stage-out")),
        (None, "lost", 100, (100, "lost heartbeat")),
        (None, "what", 77, (77, "other")),
    ],
)
def test_a_failure_is_classified_by_the_pilots_code_its_signal_or_its_exit_code(
    exit_code, reason, reported, expected
):
    found = errors.classify(exit_code, reason, reported)
    assert (found.code, found.category) == expected


def test_nothing_is_classified_without_a_code_or_a_non_zero_exit_code():
    assert errors.classify(0, "exit code 0") is None
    assert errors.classify(None, "payload failed") is None
