"""A request with several faults answers 400 naming every one of them at once (unknown keys and
bad values together), as the user guide promises, on every writable endpoint that refuses unknown
keys; and nothing is stored."""

import pytest

from matcher.models import Job
from pilots.models import Pilot

# (method, url, body, the fields the answer must name)
CASES = [
    ("post", "/api/v1/jobs/", {"foo": 1, "cpu_time": -5}, {"foo", "cpu_time"}),
    (
        "post",
        "/api/v1/jobs/",
        {"foo": 1, "bar": 2, "cpu_time": "x", "sites": ["Nowhere"], "user_priority": 11},
        {"foo", "bar", "cpu_time", "sites", "user_priority"},
    ),
    ("post", "/api/v1/tasks/", {"colour": 1, "name": 5, "owner_group": "lhcb_mc"}, None),
    (
        "post",
        "/api/v1/match/",
        {"colour": 1, "site": "LCG.CERN.ch", "cpu_time": -1},
        {"colour", "cpu_time"},
    ),
    ("post", "/api/v1/pilots/", {"colour": 1, "site": "X"}, {"colour", "reference"}),
    (
        "post",
        "/api/v1/jobs/{job}/status/",
        {"colour": 1, "status": "flying"},
        {"colour", "status", "pilot_reference"},
    ),
    ("patch", "/api/v1/config/MaxRescheduling/", {"colour": 1}, {"colour", "value"}),
    (
        "post",
        "/api/v1/classads/jobs/",
        {"colour": 1, "ad": 5, "name": 7},
        {"colour", "ad", "name"},
    ),
]


@pytest.mark.parametrize(("method", "url", "body", "fields"), CASES)
def test_a_request_with_several_faults_names_each_of_them(
    api, users, submit, method, url, body, fields
):
    job = submit("alice", cpu_time=100)
    if fields is None:  # a task: its unknown key and its non-string name
        fields = {"colour", "name"}
    jobs, pilots = Job.objects.count(), Pilot.objects.count()
    client = api(users["admin" if "config" in url else "alice"])  # parameters: staff only
    r = getattr(client, method)(url.format(job=job.pk), body, format="json")
    assert r.status_code == 400, (r.status_code, r.data)
    assert fields <= set(r.data), r.data
    assert (Job.objects.count(), Pilot.objects.count()) == (jobs, pilots)


def test_each_job_of_a_list_names_all_its_faults_and_none_is_stored(api, users):
    body = [
        {"cpu_time": 100},
        {"foo": 1, "cpu_time": -5},
        {"cpu_time": 100, "tags": "GPU", "colour": "red"},
    ]
    r = api(users["alice"]).post("/api/v1/jobs/", body, format="json")
    assert r.status_code == 400
    assert set(r.data) == {1, 2}  # the faulty items, by position
    assert set(r.data[1]) == {"foo", "cpu_time"}
    assert set(r.data[2]) == {"tags", "colour"}
    assert Job.objects.count() == 0


def test_unknown_keys_are_named_with_a_fault_the_object_checks_find(api, users):
    """Carol belongs to two groups: leaving out owner_group is an object-level fault, found
    after the fields; an unknown key is still named beside it."""
    r = api(users["carol"]).post("/api/v1/jobs/", {"foo": 1, "cpu_time": 100}, format="json")
    assert r.status_code == 400
    assert set(r.data) == {"foo", "owner_group"}
