"""The job and TaskQueue lists' query parameters, one FilterSet for the page and the API: the
documented ones work (ordering, created_after / created_before ...), and an unknown value or
parameter answers 400 naming it in the API and an error on the page, never the whole list as
if it were filtered."""

import pytest

from core import clock
from web.matcher.filters import JobFilterSet

URL = "/api/v1/jobs/"


@pytest.fixture
def three_jobs(submit):
    """Three jobs submitted an hour apart, with different CPU times."""
    jobs = []
    for cpu in (3000, 100, 2000):
        jobs.append(submit("alice", cpu_time=cpu))
        clock.advance(3600)
    return jobs


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("status=bogus", "status"),
        ("statuss=failed", "statuss"),
        ("ordering=colour", "ordering"),
        ("created_after=yesterday", "created_after"),
        ("task_queue=abc", "task_queue"),
        ("50%25=off", "50%"),  # found by schemathesis: a "%" in the name is no format
    ],
)
def test_a_bad_query_answers_400_naming_the_parameter(api, users, three_jobs, query, parameter):
    r = api(users["alice"]).get(f"{URL}?{query}")
    assert r.status_code == 400, r.data
    assert list(r.data) == [parameter], r.data


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("status=bogus", "status"),
        ("statuss=failed", "statuss"),
        ("ordering=x", "ordering"),
        ("%25s%25d=1", "%s%d"),
    ],
)
def test_the_job_page_shows_the_error_and_no_job_as_if_filtered(
    client, users, three_jobs, query, parameter
):
    client.force_login(users["alice"])
    page = client.get(f"/jobs/?{query}").content.decode()
    assert 'id="filter-errors"' in page and f"<b>{parameter}</b>" in page
    assert "No job matches these filters." in page
    assert f'href="/jobs/{three_jobs[0].pk}/"' not in page


def test_ordering_orders_the_api_list_and_its_cursor_pages_follow_that_order(
    api, users, three_jobs
):
    alice = api(users["alice"])
    r = alice.get(f"{URL}?ordering=cpu_time&page_size=2")
    assert r.status_code == 200
    cpus = [j["cpu_time"] for j in r.data["results"]]
    r = alice.get(r.data["next"])
    cpus += [j["cpu_time"] for j in r.data["results"]]
    assert cpus == [100, 2000, 3000]
    r = alice.get(f"{URL}?ordering=-created")
    assert [j["id"] for j in r.data["results"]] == [j.pk for j in reversed(three_jobs)]


def test_created_after_and_before_select_by_submission_time(api, users, three_jobs):
    first, second, third = (j.created for j in three_jobs)
    alice = api(users["alice"])
    r = alice.get(URL, {"created_after": second.isoformat()})
    assert {j["id"] for j in r.data["results"]} == {three_jobs[1].pk, three_jobs[2].pk}
    r = alice.get(URL, {"created_before": second.isoformat()})
    assert [j["id"] for j in r.data["results"]] == [three_jobs[0].pk]
    r = alice.get(URL, {"created_after": first.isoformat(), "created_before": third.isoformat()})
    assert {j["id"] for j in r.data["results"]} == {three_jobs[0].pk, three_jobs[1].pk}


def test_the_page_orders_and_filters_by_the_same_parameters(client, users, three_jobs):
    client.force_login(users["alice"])
    page = client.get("/jobs/?ordering=cpu_time").content.decode()
    positions = [page.index(f'href="/jobs/{j.pk}/"') for j in three_jobs]
    assert positions[1] < positions[2] < positions[0]  # 100 s, 2000 s, 3000 s
    after = three_jobs[1].created.isoformat()
    page = client.get("/jobs/", {"created_after": after}).content.decode()
    assert f'href="/jobs/{three_jobs[0].pk}/"' not in page
    assert f'href="/jobs/{three_jobs[2].pk}/"' in page


def test_page_and_api_share_the_job_filterset():
    from api.matcher.views import JobViewSet

    assert JobViewSet.filterset_class is JobFilterSet
    assert {"ordering", "created_after", "created_before", "status"} <= set(
        JobFilterSet.base_filters
    )


def test_taskqueues_order_by_priority_in_the_api(api, users, submit):
    from matcher.models import TaskQueue

    for cpu in (100, 10_000, 100_000):
        submit("alice", cpu_time=cpu)
    for i, tq in enumerate(TaskQueue.objects.order_by("id")):
        TaskQueue.objects.filter(pk=tq.pk).update(priority=[5.0, 1.0, 3.0][i])
    r = api(users["alice"]).get("/api/v1/task-queues/?ordering=-priority")
    assert [t["priority"] for t in r.data["results"]] == [5.0, 3.0, 1.0]
    assert api(users["alice"]).get("/api/v1/task-queues/?ordering=waiting").status_code == 400


def test_a_time_with_an_offset_postgresql_does_not_know_still_selects_by_that_instant(
    api, users, submit
):
    job = submit("alice")
    client = api(users["alice"])
    # -19:53 is a valid ISO 8601 offset that PostgreSQL refuses as a time-zone displacement.
    r = client.get("/api/v1/jobs/", {"created_after": "0311-11-26T03:14:26-19:53"})
    assert r.status_code == 200 and [j["id"] for j in r.data["results"]] == [job.pk]
    r = client.get("/api/v1/jobs/", {"created_before": "0311-11-26T03:14:26-19:53"})
    assert r.status_code == 200 and r.data["results"] == []


def test_placed_selects_the_jobs_at_a_site_exactly_or_at_none(api, users, submit):
    from matcher.models import Job

    at_cern = submit("alice", sites=["LCG.CERN.ch", "LCG.PIC.es"])
    Job.objects.filter(pk=at_cern.pk).update(site="LCG.CERN.ch")
    asked_only = submit("alice", sites=["LCG.CERN.ch"])  # waiting: asked for CERN, at none
    client = api(users["alice"])

    def ids(query):
        return [j["id"] for j in client.get(f"/api/v1/jobs/?{query}").json()["results"]]

    assert ids("placed=LCG.CERN.ch") == [at_cern.pk]
    assert ids("placed=none") == [asked_only.pk]
    assert sorted(ids("site=LCG.CERN.ch")) == sorted([at_cern.pk, asked_only.pk])
