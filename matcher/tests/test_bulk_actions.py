"""Kill or reschedule many jobs at once, from the jobs list or the API: a confirmation that
states the count, each job checked on its own (another user's is refused without revealing
it, a state that does not allow it is refused with its reason), one transaction, a message
naming what was done and what was refused."""

import pytest

from core import gdpconfig
from matcher.models import Job

pytestmark = pytest.mark.django_db


def _status(*jobs):
    return [Job.objects.get(pk=j.pk).status for j in jobs]


def test_the_api_kills_ones_own_jobs_and_refuses_another_users(api, users, submit):
    mine = [submit("alice") for _ in range(3)]
    bobs = submit("bob")
    answer = api(users["alice"]).post(
        "/api/v1/jobs/bulk/", {"action": "kill", "ids": [j.pk for j in [*mine, bobs]]},
        format="json",
    )  # fmt: skip
    assert answer.status_code == 200
    body = answer.json()
    assert body["done"] == [j.pk for j in mine]
    assert body["refused"] == [{"id": bobs.pk, "reason": "not a job you may act on"}]
    assert _status(*mine) == ["cancelled"] * 3 and _status(bobs) == ["activated"]


def test_a_job_whose_state_refuses_it_is_named_and_the_others_are_done(api, users, submit):
    done, waiting = submit("alice"), submit("alice")
    client = api(users["alice"])
    client.post(f"/api/v1/jobs/{done.pk}/kill/")
    answer = client.post("/api/v1/jobs/bulk/", {"action": "kill", "ids": [done.pk, waiting.pk]},
                         format="json").json()  # fmt: skip
    assert answer["done"] == [waiting.pk]
    [refused] = answer["refused"]
    assert refused["id"] == done.pk and refused["reason"].startswith("cannot be killed")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "explode", "ids": [1]}, "action"),
        ({"action": "kill", "ids": []}, "ids"),
        ({"action": "kill", "ids": ["1"]}, "ids"),
        ({"action": "kill", "ids": [1], "why": "x"}, "why"),
    ],
)
def test_a_bad_bulk_request_is_a_400_naming_the_field(api, users, body, field):
    answer = api(users["alice"]).post("/api/v1/jobs/bulk/", body, format="json")
    assert answer.status_code == 400 and field in answer.json()


def test_more_jobs_than_max_bulk_jobs_are_refused_whole(api, users, submit):
    gdpconfig.set_value("MaxBulkJobs", 2)
    jobs = [submit("alice") for _ in range(3)]
    answer = api(users["alice"]).post(
        "/api/v1/jobs/bulk/", {"action": "kill", "ids": [j.pk for j in jobs]}, format="json"
    )
    assert answer.status_code == 400 and "MaxBulkJobs" in str(answer.json()["ids"])
    assert _status(*jobs) == ["activated"] * 3


def test_the_list_asks_with_the_count_then_kills_and_says_what_it_did(client, users, submit):
    mine = [submit("alice") for _ in range(3)]
    bobs = submit("bob")
    client.force_login(users["alice"])
    form = {
        "action": "kill",
        "job": [str(j.pk) for j in [*mine, bobs]],
        "query": "status=activated",
    }
    asked = client.post("/jobs/bulk/", form)
    assert asked.status_code == 200 and "Kill 4 jobs?" in asked.content.decode()
    assert _status(*mine) == ["activated"] * 3  # nothing without a yes
    done = client.post("/jobs/bulk/", {**form, "confirm": "yes"}, follow=True)
    html = done.content.decode()
    assert done.redirect_chain[-1][0] == "/jobs/?status=activated"
    assert f"3 jobs killed: {', '.join(str(j.pk) for j in mine)}." in html
    assert f"1 refused: {bobs.pk}: not a job you may act on." in html
    assert _status(*mine) == ["cancelled"] * 3 and _status(bobs) == ["activated"]


def test_all_matching_acts_on_every_job_the_filters_select_and_no_other(client, users, submit):
    cern = [submit("alice", sites=["LCG.CERN.ch"]) for _ in range(2)]
    other = submit("alice", sites=["LCG.PIC.es"])
    client.force_login(users["alice"])
    form = {"action": "reschedule", "all": "1", "query": "site=LCG.CERN.ch&page=1&page_size=25"}
    asked = client.post("/jobs/bulk/", form)
    assert "Reschedule 2 jobs?" in asked.content.decode()
    client.post("/jobs/bulk/", {**form, "action": "kill", "confirm": "yes"})
    assert _status(*cern) == ["cancelled"] * 2 and _status(other) == ["activated"]


def test_the_list_offers_the_bulk_form_with_a_box_per_job(client, users, submit):
    job = submit("alice")
    client.force_login(users["alice"])
    html = client.get("/jobs/?status=activated").content.decode()
    assert 'id="bulk-form"' in html and f'name="job" value="{job.pk}"' in html
    assert 'name="query" value="status=activated"' in html
