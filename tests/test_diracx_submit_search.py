"""DiracX's job endpoints on gridwms (api/diracx/): JDL submission, search and summary, asked
as DiracX's client asks (`Authorization: Bearer <API token key>`, JSON bodies)."""

from datetime import datetime

import pytest
from django.conf import settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core import gdpconfig
from matcher import services
from matcher.models import Job

pytestmark = pytest.mark.django_db

HELLO = 'Executable = "/bin/echo"; Arguments = "hello"; JobName = "hello"; CPUTime = 100;'


def dirac(user) -> APIClient:
    client = APIClient()
    key = Token.objects.get_or_create(user=user)[0].key
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _submit(client, jdls):
    return client.post("/api/jobs/jdl", jdls, format="json")


def _search(client, body=None, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return client.post(f"/api/jobs/search?{query}", body or {}, format="json")


def _ids(response) -> set[int]:
    return {row["JobID"] for row in response.json()}


# --- submission ----------------------------------------------------------------------------------


def test_a_jdl_becomes_a_job_of_its_sender_answered_in_diracs_words(users):
    answer = _submit(dirac(users["alice"]), [HELLO])
    assert answer.status_code == 201, answer.content
    [inserted] = answer.json()
    assert set(inserted) == {"JobID", "Status", "MinorStatus", "TimeStamp"}
    job = Job.objects.get(pk=inserted["JobID"])
    assert (job.owner.username, job.name, job.cpu_time) == ("alice", "hello", 100)
    assert (job.executable, job.arguments) == ("/bin/echo", ["hello"])
    assert job.status == "activated"
    assert (inserted["Status"], inserted["MinorStatus"]) == ("Waiting", "Pilot Agent Submission")
    assert "hello" in job.jdl


def test_a_jdl_without_cputime_gets_diracs_default_of_a_day(users):
    answer = _submit(dirac(users["alice"]), ['Executable = "/bin/true";'])
    assert answer.status_code == 201, answer.content
    assert Job.objects.get(pk=answer.json()[0]["JobID"]).cpu_time == 86400


def test_a_list_of_jdls_is_stored_all_or_nothing_naming_the_bad_one(users):
    answer = _submit(dirac(users["alice"]), [HELLO, "CPUTime = -5;"])
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("jdl[1]: CPUTime:")
    assert not Job.objects.exists()


def test_a_jdl_that_does_not_parse_is_a_400_naming_it_and_stores_nothing(users):
    answer = _submit(dirac(users["alice"]), ["Executable = ;;; [[["])
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("jdl[0]: JDL: not valid ClassAd syntax")
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"jdl": HELLO}, "body: must be a non-empty list"),
        ([], "body: must be a non-empty list"),
        ([42], "jdl[0]: must be a string"),
        ([HELLO, None], "jdl[1]: must be a string"),
        (['Executable = "/bin/echo\x00"; CPUTime = 10;'], "jdl[0]: must not hold a NUL"),
        (['Executable = "x"; Site = "Nowhere.ch";'], "jdl[0]: Site: Unknown site: Nowhere.ch"),
        (['Executable = "x"; Priority = "high";'], "jdl[0]: Priority:"),
        (['Executable = "x"; InputSandbox = {"a.txt"};'], "jdl[0]: InputSandbox: names files"),
    ],
)
def test_a_malformed_submission_is_a_400_naming_the_field(users, body, named):
    answer = _submit(dirac(users["alice"]), body)
    assert answer.status_code == 400, answer.content
    assert answer.json()["detail"].startswith(named), answer.json()
    assert not Job.objects.exists()


def test_a_jdl_over_max_jdl_bytes_is_refused_before_it_is_read(users):
    gdpconfig.set_value("MaxJDLBytes", 1024)
    answer = _submit(dirac(users["alice"]), [HELLO + " " * 2000])
    assert answer.status_code == 400
    assert "MaxJDLBytes" in answer.json()["detail"]


def test_a_user_of_several_groups_names_the_owner_group_in_the_jdl(users):
    carol = dirac(users["carol"])
    refused = _submit(carol, [HELLO])
    assert refused.status_code == 400
    assert refused.json()["detail"].startswith("jdl[0]: OwnerGroup: Required")
    taken = _submit(carol, [HELLO + ' OwnerGroup = "lhcb_mc";'])
    assert taken.status_code == 201, taken.content
    assert Job.objects.get(pk=taken.json()[0]["JobID"]).owner_group.name == "lhcb_mc"


def test_a_parametric_jdl_expands_to_one_job_per_value(users):
    jdl = 'Executable = "/bin/echo"; Arguments = "run %s of %n"; Parameters = {"a","b","c"};'
    answer = _submit(dirac(users["alice"]), [jdl + " CPUTime = 10;"])
    assert answer.status_code == 201, answer.content
    jobs = [Job.objects.get(pk=row["JobID"]) for row in answer.json()]
    assert [j.arguments for j in jobs] == [
        ["run", "a", "of", "0"],
        ["run", "b", "of", "1"],
        ["run", "c", "of", "2"],
    ]
    assert all("ParameterNumber" in j.jdl and "Parameters" not in j.jdl for j in jobs)


def test_a_numbered_parametric_jdl_runs_from_its_start_by_its_step_and_factor(users):
    jdl = (
        'Executable = "/bin/echo"; Arguments = "%s"; CPUTime = 10; Parameters = 4; '
        "ParameterStart = 1; ParameterStep = 1; ParameterFactor = 2;"
    )
    answer = _submit(dirac(users["alice"]), [jdl])
    assert answer.status_code == 201, answer.content
    args = [Job.objects.get(pk=r["JobID"]).arguments for r in answer.json()]
    assert args == [["1"], ["3"], ["7"], ["15"]]


def test_a_parametric_jdl_cannot_go_in_a_bulk_submission(users):
    answer = _submit(dirac(users["alice"]), [HELLO, HELLO + " Parameters = 2;"])
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("jdl[1]: Parameters:")
    assert not Job.objects.exists()


def test_a_parametric_jdl_of_more_jobs_than_a_submission_carries_is_refused_uncounted(users):
    gdpconfig.set_value("MaxJobsPerSubmission", 5)
    answer = _submit(dirac(users["alice"]), [HELLO + " Parameters = 1000000000;"])
    assert answer.status_code == 400
    assert "MaxJobsPerSubmission" in answer.json()["detail"]
    assert answer.json()["detail"].startswith("jdl[0]: Parameters:")
    assert not Job.objects.exists()


def test_an_anonymous_client_is_told_to_authenticate(db):
    assert _submit(APIClient(), [HELLO]).status_code == 401
    assert _search(APIClient()).status_code == 401


# --- search --------------------------------------------------------------------------------------


def test_a_search_by_job_id_as_text_shows_the_owner_and_a_dirac_status(users):
    alice = dirac(users["alice"])
    job_id = _submit(alice, [HELLO]).json()[0]["JobID"]
    condition = {"parameter": "JobID", "operator": "eq", "value": str(job_id)}
    answer = _search(alice, {"search": [condition]})
    assert answer.status_code == 200, answer.content
    [row] = answer.json()
    assert (row["JobID"], row["Owner"], row["OwnerGroup"]) == (job_id, "alice", "lhcb_user")
    assert (row["Status"], row["MinorStatus"], row["Site"]) == (
        "Waiting",
        "Pilot Agent Submission",
        "ANY",
    )
    assert row["ApplicationStatus"] == "Unknown"


def test_bob_does_not_see_alices_jobs_and_staff_see_everyones(users, submit):
    mine = submit("alice")
    his = submit("bob")
    assert _ids(_search(dirac(users["bob"]))) == {his.pk}
    assert _ids(_search(dirac(users["admin"]))) >= {mine.pk, his.pk}
    by_id = {"search": [{"parameter": "JobID", "operator": "eq", "value": mine.pk}]}
    assert _search(dirac(users["bob"]), by_id).json() == []


def test_a_jobsharing_group_member_sees_the_groups_jobs(users, submit):
    carols = submit("carol", owner_group="lhcb_mc")
    submit("carol", owner_group="lhcb_user")
    assert _ids(_search(dirac(users["erin"]))) == {carols.pk}


def test_the_parameters_asked_for_are_the_columns_answered(users, submit):
    submit("alice", name="one")
    answer = _search(dirac(users["alice"]), {"parameters": ["JobName", "Status"]})
    assert answer.json() == [{"JobName": "one", "Status": "Waiting"}]


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"parameter": "JobName", "operator": "eq", "value": "b1"}, {"b1"}),
        ({"parameter": "JobName", "operator": "neq", "value": "b1"}, {"a1", "a2"}),
        ({"parameter": "JobName", "operator": "like", "value": "a%"}, {"a1", "a2"}),
        ({"parameter": "JobName", "operator": "not like", "value": "a_"}, {"b1"}),
        ({"parameter": "JobName", "operator": "regex", "value": "[ab]1"}, {"a1", "b1"}),
        ({"parameter": "JobName", "operator": "in", "values": ["a2", "b1", "zz"]}, {"a2", "b1"}),
        ({"parameter": "JobName", "operator": "not in", "values": ["a2"]}, {"a1", "b1"}),
        ({"parameter": "JobName", "operator": "gt", "value": "a2"}, {"b1"}),
        ({"parameter": "JobName", "operator": "lt", "value": "a2"}, {"a1"}),
        ({"parameter": "Status", "operator": "eq", "value": "Waiting"}, {"a1", "a2", "b1"}),
        ({"parameter": "Status", "operator": "neq", "value": "Waiting"}, set()),
        ({"parameter": "Status", "operator": "in", "values": ["Running", "Done"]}, set()),
        ({"parameter": "MinorStatus", "operator": "like", "value": "Pilot%"}, {"a1", "a2", "b1"}),
        ({"parameter": "Owner", "operator": "eq", "value": "alice"}, {"a1", "a2", "b1"}),
        ({"parameter": "UserPriority", "operator": "gt", "value": "3"}, {"b1"}),
        ({"parameter": "JobID", "operator": "like", "value": "%"}, {"a1", "a2", "b1"}),
    ],
)
def test_each_operator_filters_as_diracx_defines_it(users, submit, condition, expected):
    for name, priority in (("a1", 1), ("a2", 1), ("b1", 5)):
        submit("alice", name=name, user_priority=priority)
    answer = _search(dirac(users["alice"]), {"parameters": ["JobName"], "search": [condition]})
    assert answer.status_code == 200, answer.content
    assert {row["JobName"] for row in answer.json()} == expected


def test_a_search_without_parameters_answers_every_dirac_column_gridwms_keeps(users, submit):
    from api.diracx.search import COLUMNS

    job = submit("alice")
    [row] = _search(dirac(users["alice"])).json()
    assert list(row) == list(COLUMNS)
    assert (row["VO"], row["JobType"], row["JobGroup"]) == (settings.GRID_VO, "User", None)
    assert (row["StartExecTime"], row["EndExecTime"], row["HeartBeatTime"]) == (None, None, None)
    assert datetime.fromisoformat(row["SubmissionTime"]) == job.created


@pytest.mark.parametrize(
    ("operator", "value", "found"),
    [
        ("gt", "2000-01-01T00:00:00", True),  # without a zone: UTC
        ("gt", "2000-01-01T00:00:00+02:00", True),
        ("lt", "2000-01-01 00:00", False),
    ],
)
def test_a_time_condition_compares_moments(users, submit, operator, value, found):
    submit("alice")
    condition = {"parameter": "LastUpdateTime", "operator": operator, "value": value}
    answer = _search(dirac(users["alice"]), {"search": [condition]})
    assert answer.status_code == 200, answer.content
    assert bool(answer.json()) is found


def test_a_killed_job_shows_as_killed_with_its_end_time(users, submit):
    from matcher import services

    job = submit("alice")
    services.kill_job(job.pk, users["alice"])
    condition = {"parameter": "Status", "operator": "eq", "value": "Killed"}
    [row] = _search(dirac(users["alice"]), {"search": [condition]}).json()
    assert row["JobID"] == job.pk
    assert row["EndExecTime"] is not None


def test_conditions_combine_with_and_even_on_one_column(users, submit):
    ids = sorted(submit("alice").pk for _ in range(3))
    search = [
        {"parameter": "JobID", "operator": "like", "value": "%"},
        {"parameter": "JobID", "operator": "not like", "value": str(ids[0])},
        {"parameter": "JobID", "operator": "gt", "value": str(ids[0])},
        {"parameter": "JobID", "operator": "neq", "value": ids[2]},
    ]
    answer = _search(dirac(users["alice"]), {"parameters": ["JobID"], "search": search})
    assert answer.json() == [{"JobID": ids[1]}]


def test_a_page_of_a_larger_result_is_a_206_with_its_content_range(users, submit):
    ids = sorted(submit("alice").pk for _ in range(3))
    alice = dirac(users["alice"])
    first = _search(alice, page=1, per_page=2)
    assert first.status_code == 206
    assert first["Content-Range"] == "jobs 0-1/3"
    assert [r["JobID"] for r in first.json()] == ids[:2]
    second = _search(alice, page=2, per_page=2)
    assert (second.status_code, second["Content-Range"]) == (206, "jobs 2-2/3")
    assert [r["JobID"] for r in second.json()] == ids[2:]
    past = _search(alice, page=3, per_page=2)
    assert (past.status_code, past["Content-Range"]) == (416, "jobs */3")
    whole = _search(alice, per_page=3)
    assert whole.status_code == 200 and "Content-Range" not in whole


def test_a_search_sorts_by_the_columns_named(users, submit):
    ids = [submit("alice", name=n).pk for n in ("b", "a", "c")]
    sort = [{"parameter": "JobName", "direction": "desc"}]
    answer = _search(dirac(users["alice"]), {"parameters": ["JobID"], "sort": sort})
    assert [r["JobID"] for r in answer.json()] == [ids[2], ids[0], ids[1]]


@pytest.mark.parametrize(
    ("body", "params", "named"),
    [
        ([1, 2], {}, "body: must be a JSON object"),
        ({"filters": []}, {}, "body.filters: unknown field"),
        ({"parameters": ["Nope"]}, {}, "parameters[0]: unknown job parameter"),
        ({"parameters": "JobID"}, {}, "parameters: must be a list"),
        ({"search": [{"parameter": "JobID", "operator": "~", "value": 1}]}, {}, "search[0].op"),
        ({"search": [{"parameter": "JobID", "operator": "eq"}]}, {}, "search[0].value: required"),
        ({"search": [{"parameter": "JobID", "operator": "eq", "value": "x"}]}, {}, "search[0].v"),
        ({"search": [{"parameter": "JobID", "operator": "in", "values": 3}]}, {}, "search[0].va"),
        ({"search": [{"parameter": "Status", "operator": "eq", "value": "activated"}]}, {}, "se"),
        ({"search": [{"parameter": "JobName", "operator": "eq", "value": "a\x00"}]}, {}, "sea"),
        ({"search": [{"parameter": "JobName", "operator": "regex", "value": "("}]}, {}, "sear"),
        ({"search": ["JobID eq 1"]}, {}, "search[0]: must be an object"),
        ({"search": [{"parameter": "LastUpdateTime", "operator": "gt", "value": "x"}]}, {}, "s"),
        (
            {"search": [{"parameter": "SubmissionTime", "operator": "lt", "value": "2026-02-30"}]},
            {},
            "search[0].value: not an ISO 8601",
        ),
        ({"sort": [{"parameter": "JobID", "direction": "up"}]}, {}, "sort[0].direction"),
        ({"distinct": "yes"}, {}, "distinct: must be true or false"),
        ({}, {"page": "0"}, "page: must be a positive integer"),
        ({}, {"per_page": "many"}, "per_page: must be a positive integer"),
    ],
)
def test_a_malformed_search_is_a_400_naming_the_field(users, submit, body, params, named):
    submit("alice")
    query = "&".join(f"{k}={v}" for k, v in params.items())
    answer = dirac(users["alice"]).post(f"/api/jobs/search?{query}", body, format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["detail"].startswith(named), answer.json()


def test_a_status_named_in_gridwms_words_is_refused_naming_diracs_vocabulary(users):
    condition = {"parameter": "Status", "operator": "in", "values": ["Waiting", "running"]}
    answer = _search(dirac(users["alice"]), {"search": [condition]})
    assert answer.status_code == 400
    assert answer.json()["detail"] == ("search[0].values[1]: 'running' is not a DIRAC job status")


def test_a_regular_expression_postgresql_refuses_is_a_400_not_a_500(users, submit):
    submit("alice")
    condition = {"parameter": "JobName", "operator": "regex", "value": "(?P<x>a)"}
    answer = _search(dirac(users["alice"]), {"search": [condition]})
    assert answer.status_code == 400, answer.content
    assert answer.json()["detail"].startswith("search: the database refused a condition")


def test_a_body_that_is_not_json_is_a_400(users):
    answer = dirac(users["alice"]).generic(
        "POST", "/api/jobs/search", "{not json", content_type="application/json"
    )
    assert answer.status_code == 400
    assert "JSON parse error" in answer.json()["detail"]


# --- summary -------------------------------------------------------------------------------------


def test_a_summary_counts_the_visible_jobs_per_grouping_value(users, submit):
    submit("alice")
    submit("alice")
    submit("bob")
    answer = dirac(users["alice"]).post(
        "/api/jobs/summary", {"grouping": ["Owner", "Status"]}, format="json"
    )
    assert answer.status_code == 200, answer.content
    assert answer.json() == [{"Owner": "alice", "Status": "Waiting", "count": 2}]


def test_a_summary_groups_by_columns_gridwms_does_not_keep_as_one_value(users, submit):
    submit("alice")
    submit("alice")
    body = {"grouping": ["VO", "JobGroup", "Site"]}
    answer = dirac(users["alice"]).post("/api/jobs/summary", body, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json() == [{"VO": settings.GRID_VO, "JobGroup": None, "Site": "ANY", "count": 2}]


def test_a_summary_read_from_the_job_counts_equals_one_counted_over_the_job_table(users, submit):
    from matcher.services import rollups

    for owner in ("alice", "alice", "bob"):
        submit(owner)
    job = submit("alice")
    services.kill_job(job.pk, users["alice"])
    grouping = ["Status", "MinorStatus", "Site", "Owner", "OwnerGroup", "VO", "JobType"]
    everything = [{"parameter": "JobID", "operator": "gt", "value": 0}]
    for who in ("alice", "admin"):
        client = dirac(users[who])
        counted = client.post("/api/jobs/summary", {"grouping": grouping}, format="json")
        rollups.fold()
        folded = client.post("/api/jobs/summary", {"grouping": grouping}, format="json")
        scanned = client.post(
            "/api/jobs/summary", {"grouping": grouping, "search": everything}, format="json"
        )
        assert counted.status_code == scanned.status_code == 200, counted.content
        assert counted.json() == folded.json() == scanned.json()
        assert sum(row["count"] for row in scanned.json()) >= 3


def test_a_summary_filters_by_its_search_first(users, submit):
    submit("alice", name="x")
    submit("alice", name="y")
    body = {
        "grouping": ["JobName"],
        "search": [{"parameter": "JobName", "operator": "eq", "value": "y"}],
    }
    answer = dirac(users["alice"]).post("/api/jobs/summary", body, format="json")
    assert answer.json() == [{"JobName": "y", "count": 1}]


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({}, "grouping: required"),
        ({"grouping": []}, "grouping: must name at least one"),
        ({"grouping": ["Colour"]}, "grouping[0]: unknown job parameter"),
        ({"grouping": ["Status\x00"]}, "grouping[0]: must not hold a NUL"),
        ({"grouping": ["Status"], "search": {"a": 1}}, "search: must be a list"),
    ],
)
def test_a_malformed_summary_is_a_400_naming_the_field(users, body, named):
    answer = dirac(users["alice"]).post("/api/jobs/summary", body, format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["detail"].startswith(named), answer.json()
