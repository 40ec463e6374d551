import pytest

from matcher.models import Job, JobStatusHistory, TaskQueue, TaskQueueJob

URL = "/api/v1/jobs/"


def nothing_stored():
    return (
        Job.objects.count() == 0
        and TaskQueue.objects.count() == 0
        and TaskQueueJob.objects.count() == 0
        and JobStatusHistory.objects.count() == 0
    )


def test_a_valid_job_answers_201_with_id_status_and_taskqueue(api, users):
    r = api(users["alice"]).post(
        URL, {"cpu_time": 3600, "sites": ["LCG.CERN.ch"], "user_priority": 3}, format="json"
    )
    assert r.status_code == 201, r.content
    job = Job.objects.get(pk=r.data["id"])
    assert r.data == {
        "id": job.pk,
        "status": "activated",
        "task_queue": job.task_queue_id,
        "warnings": [],
    }
    assert job.owner == users["alice"]
    assert job.owner_group.name == "lhcb_user"  # her only group
    assert job.setup == "LHCb-Production"  # DefaultSetup


def test_a_list_of_jobs_answers_a_list_and_stores_all(api, users):
    jobs = [{"cpu_time": 100 * (i + 1), "owner_group": "lhcb_mc"} for i in range(5)]
    r = api(users["carol"]).post(URL, jobs, format="json")
    assert r.status_code == 201, r.content
    assert len(r.data) == 5
    assert Job.objects.filter(owner_group__name="lhcb_mc").count() == 5


def test_a_list_with_one_bad_job_stores_nothing_and_names_the_item_and_field(api, users):
    jobs = [{"cpu_time": 100}, {"cpu_time": 100, "sites": ["Nowhere"]}, {"cpu_time": 50}]
    r = api(users["alice"]).post(URL, jobs, format="json")
    assert r.status_code == 400
    assert list(r.data) == [1] and "sites" in r.data[1]  # errors keyed by item
    assert nothing_stored()


BAD_JOBS = [
    ({"cpu_time": 100, "colour": "red"}, "colour"),
    ({"cpu_time": "100"}, "cpu_time"),
    ({"cpu_time": 100.5}, "cpu_time"),
    ({"cpu_time": True}, "cpu_time"),
    ({"cpu_time": -5}, "cpu_time"),
    ({"cpu_time": 0}, "cpu_time"),
    ({}, "cpu_time"),
    ({"cpu_time": 100, "user_priority": 11}, "user_priority"),
    ({"cpu_time": 100, "user_priority": -1}, "user_priority"),
    ({"cpu_time": 100, "user_priority": "high"}, "user_priority"),
    ({"cpu_time": 100, "sites": "LCG.CERN.ch"}, "sites"),
    ({"cpu_time": 100, "sites": ["Nowhere.xx"]}, "sites"),
    ({"cpu_time": 100, "banned_sites": ["Nowhere.xx"]}, "banned_sites"),
    ({"cpu_time": 100, "grid_ces": ["ce.nowhere.xx"]}, "grid_ces"),
    ({"cpu_time": 100, "tags": [1, 2]}, "tags"),
    ({"cpu_time": 100, "platforms": [""]}, "platforms"),
    ({"cpu_time": 100, "owner_group": "lhcb_data"}, "owner_group"),
    ({"cpu_time": 100, "owner_group": "no_such_group"}, "owner_group"),
    ({"cpu_time": 100, "setup": 7}, "setup"),
]


@pytest.mark.parametrize(("body", "field"), BAD_JOBS, ids=[f for _, f in BAD_JOBS])
def test_bad_input_answers_400_naming_the_field_and_stores_nothing(api, users, body, field):
    r = api(users["alice"]).post(URL, body, format="json")
    assert r.status_code == 400, r.content
    assert field in r.data, r.data
    assert nothing_stored()


def test_a_group_the_user_is_not_in_is_refused_with_a_clear_message(api, users):
    r = api(users["alice"]).post(URL, {"cpu_time": 1, "owner_group": "lhcb_data"}, format="json")
    assert "not a member of group lhcb_data" in str(r.data["owner_group"][0])


def test_a_user_in_several_groups_must_name_one(api, users):
    r = api(users["carol"]).post(URL, {"cpu_time": 100}, format="json")
    assert r.status_code == 400 and "owner_group" in r.data
    assert nothing_stored()


@pytest.mark.parametrize("body", [[], "just text", 42, [1, 2]])
def test_a_body_that_is_not_a_job_or_a_list_of_jobs_is_refused(api, users, body):
    r = api(users["alice"]).post(URL, body, format="json")
    assert r.status_code == 400
    assert nothing_stored()


def test_a_list_longer_than_max_jobs_per_submission_is_refused(api, users):
    from core import gdpconfig

    gdpconfig.set_value("MaxJobsPerSubmission", 3)
    r = api(users["alice"]).post(URL, [{"cpu_time": 10}] * 4, format="json")
    assert r.status_code == 400
    assert "MaxJobsPerSubmission" in str(r.data)
    assert nothing_stored()


def test_anonymous_clients_cannot_submit(api, world):
    r = api().post(URL, {"cpu_time": 100}, format="json")
    assert r.status_code in (401, 403)
    assert nothing_stored()


def test_a_token_authenticates_an_api_client(client, users):
    from rest_framework.authtoken.models import Token

    token = Token.objects.get(user=users["bob"]).key
    r = client.post(
        URL,
        data='{"cpu_time": 600, "tags": ["GPU"]}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert r.status_code == 201, r.content
    assert Job.objects.get().owner == users["bob"]


def test_the_readme_example_gets_a_token_and_submits_a_job(client, users):
    r = client.post("/api/v1/auth/token/", {"username": "alice", "password": "gridwms"})
    assert r.status_code == 200
    token = r.json()["token"]
    r = client.post(
        URL,
        data='{"cpu_time": 3600, "sites": ["LCG.CERN.ch"], "user_priority": 3}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert r.status_code == 201 and r.json()["status"] == "activated"
