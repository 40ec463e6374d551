"""The jobs list works like the tools people know: every column sorts both
ways on the server with ties broken by id, search finds a job by id, name or task, a time
range selects by the last change of state, the page size is bounded, and the CSV and JSON
exports stream exactly what the filters select, to whoever may see it, for the page and the
API alike."""

import csv
import io
import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from brokerage.models import Task, TaskJob
from core import clock
from matcher.models import Job

EXPORT = "/api/v1/jobs/export/"


def page_ids(response) -> list[int]:
    return [int(i) for i in re.findall(r'<td><a href="/jobs/(\d+)/">', response.content.decode())]


def body(response) -> str:
    return b"".join(response.streaming_content).decode()


def csv_rows(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(body(response))))


@pytest.fixture
def jobs(submit):
    """Nine jobs of three users and two groups, whose columns differ and tie, an hour apart."""
    specs = [
        ("alice", "zeta", 300, 2, "LCG.CERN.ch", "failed"),
        ("bob", "alpha", 100, 5, "LCG.CNAF.it", "finished"),
        ("dave", "mid", 200, 2, "", "activated"),
        ("alice", "beta", 100, 9, "LCG.CERN.ch", "finished"),
        ("dave", "alpha", 900, 0, "LCG.PIC.es", "failed"),
        ("bob", "omega", 300, 2, "", "activated"),
        ("alice", "gamma", 50, 5, "LCG.PIC.es", "running"),
        ("dave", "delta", 200, 7, "LCG.CNAF.it", "finished"),
        ("bob", "beta", 900, 1, "", "activated"),
    ]
    out = []
    for i, (user, name, cpu, prio, site, status) in enumerate(specs):
        job = submit(user, name=name, cpu_time=cpu, user_priority=prio)
        changed = clock.now() - timedelta(hours=(i * 7) % 5)
        Job.objects.filter(pk=job.pk).update(status=status, site=site, status_changed=changed)
        clock.advance(3600)
        out.append(job.pk)
    # A job that never joined a TaskQueue: its NULL sorts as 0.
    Job.objects.filter(pk=out[4]).update(task_queue=None)
    return Job.objects.filter(pk__in=out).select_related("owner", "owner_group")


SORT_KEYS = {
    "id": lambda j: j.pk,
    "name": lambda j: j.name,
    "owner": lambda j: j.owner.username,
    "group": lambda j: j.owner_group.name,
    "status": lambda j: j.status,
    "cpu_time": lambda j: j.cpu_time,
    "user_priority": lambda j: j.user_priority,
    "task_queue": lambda j: j.task_queue_id or 0,
    "site": lambda j: j.site,
    "created": lambda j: j.created,
    "status_changed": lambda j: j.status_changed,
}


@pytest.mark.parametrize("key", sorted(SORT_KEYS))
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_every_jobs_column_sorts_the_page_and_the_api_both_ways_ties_broken_by_id(
    client, api, users, jobs, key, descending
):
    expected = [
        j.pk for j in sorted(jobs, key=lambda j: (SORT_KEYS[key](j), j.pk), reverse=descending)
    ]
    assert len(set(map(SORT_KEYS[key], jobs))) > 1, "the column must differ to test its sort"
    ordering = f"-{key}" if descending else key
    client.force_login(users["admin"])
    r = client.get("/jobs/", {"ordering": ordering})
    assert r.status_code == 200
    assert page_ids(r) == expected
    r = api(users["admin"]).get("/api/v1/jobs/", {"ordering": ordering, "page_size": 4})
    ids = [j["id"] for j in r.data["results"]]
    while r.data["next"]:
        r = api(users["admin"]).get(r.data["next"])
        ids += [j["id"] for j in r.data["results"]]
    assert ids == expected


def test_a_column_header_sorts_by_it_keeping_the_filters_and_a_second_click_reverses(
    client, users, jobs
):
    client.force_login(users["admin"])
    page = client.get("/jobs/", {"status": "finished", "page": 2}).content.decode()
    link = re.search(r'data-sort="cpu_time" href="\?([^"]+)"', page).group(1)
    assert "status=finished" in link and "ordering=cpu_time" in link and "page=" not in link
    page = client.get("/jobs/?" + link.replace("&amp;", "&")).content.decode()
    assert 'aria-sort="ascending"' in page
    assert "ordering=-cpu_time" in re.search(r'data-sort="cpu_time" href="([^"]+)"', page)[1]


def test_an_unlisted_sort_column_answers_400_on_the_page_and_in_the_api(client, api, users, jobs):
    client.force_login(users["admin"])
    r = client.get("/jobs/", {"ordering": "jdl"})
    assert r.status_code == 400 and "<b>ordering</b>" in r.content.decode()
    assert page_ids(r) == []
    assert api(users["admin"]).get("/api/v1/jobs/?ordering=jdl").status_code == 400


def test_search_finds_a_job_by_its_id_by_part_of_its_name_and_by_its_task(client, users, jobs):
    alice = users["alice"]
    mine = jobs.filter(owner=alice).order_by("id")
    now = clock.now()
    task = Task.objects.create(
        name="mc23_ttbar", owner=alice, owner_group=alice.grid_groups.get(), status="running",
        created=now, modified=now,
    )  # fmt: skip
    TaskJob.objects.create(job=mine[2], task=task)
    client.force_login(alice)
    # a number is a job id or a task id: the job with that id and the jobs of that task
    other = next(j for j in mine if j.pk != task.pk)
    assert page_ids(client.get("/jobs/", {"q": str(other.pk)})) == [other.pk]
    both = sorted({task.pk, mine[2].pk}, reverse=True) if task.pk in {j.pk for j in mine} else None
    if both:
        assert page_ids(client.get("/jobs/", {"q": str(task.pk)})) == both
    assert page_ids(client.get("/jobs/", {"q": "ET"})) == [mine[1].pk, mine[0].pk]  # beta, zeta
    if not both:
        assert page_ids(client.get("/jobs/", {"q": str(task.pk)})) == [mine[2].pk]
    assert page_ids(client.get("/jobs/", {"q": "TTBAR"})) == [mine[2].pk]
    # a digit that is no ASCII digit is text, found nowhere (it was a 500, found by fuzzing)
    r = client.get("/jobs/", {"q": "²"})
    assert r.status_code == 200 and page_ids(r) == []
    # bob's "beta" is not alice's to find
    assert set(page_ids(client.get("/jobs/", {"q": "beta"}))) == {mine[1].pk}


def test_the_time_range_selects_by_the_last_change_of_state(client, api, users, jobs):
    now = clock.now()
    by_age = {j.pk: now - j.status_changed for j in jobs}
    client.force_login(users["admin"])
    for period, span in (("hour", 3600), ("day", 86400)):
        expected = sorted((pk for pk, age in by_age.items() if age.total_seconds() <= span),
                          reverse=True)  # fmt: skip
        assert page_ids(client.get("/jobs/", {"period": period})) == expected
        r = api(users["admin"]).get("/api/v1/jobs/", {"period": period})
        assert [j["id"] for j in r.data["results"]] == expected
    since, until = now - timedelta(hours=12), now - timedelta(hours=8)
    expected = sorted((j.pk for j in jobs if since <= j.status_changed < until), reverse=True)
    assert expected, "the custom range must select some jobs"
    r = client.get("/jobs/", {"since": since.isoformat(), "until": until.isoformat()})
    assert page_ids(r) == expected
    assert client.get("/jobs/", {"period": "month"}).status_code == 400


def test_the_page_size_is_chosen_and_bounded_and_a_bad_one_answers_400(client, users, submit):
    for _ in range(30):
        submit("alice")
    client.force_login(users["alice"])
    assert len(page_ids(client.get("/jobs/"))) == 30
    r = client.get("/jobs/", {"page_size": 25})
    assert len(page_ids(r)) == 25 and "26–30" not in r.content.decode()
    assert len(page_ids(client.get("/jobs/", {"page_size": 25, "page": 2}))) == 5
    for bad in ("0", "501", "many", "-5", "\uff15\uff10", "9" * 5000):  # fullwidth "50"
        r = client.get("/jobs/", {"page_size": bad})
        assert r.status_code == 400, bad
        assert "<b>page_size</b>" in r.content.decode() and page_ids(r) == []
    assert client.get("/jobs/", {"page_size": 500}).status_code == 200


def test_the_csv_export_is_the_apis_json_export_and_list_for_the_same_filters(
    client, api, users, jobs
):
    query = {"status": ["finished", "failed"], "ordering": "-cpu_time", "q": "a"}
    client.force_login(users["admin"])
    page_csv = client.get("/jobs/", {**query, "format": "csv"})
    assert page_csv["Content-Type"].startswith("text/csv")
    rows = csv_rows(page_csv)
    admin = api(users["admin"])
    as_json = json.loads(body(admin.get(EXPORT, {**query, "format": "json"})))
    api_csv = csv_rows(admin.get(EXPORT, {**query, "format": "csv"}))
    listed = admin.get("/api/v1/jobs/", query).data["results"]
    assert rows == api_csv
    assert rows == [{k: "" if v is None else str(v) for k, v in o.items()} for o in as_json]
    assert [int(r["id"]) for r in rows] == [j["id"] for j in listed]
    assert [r["status"] for r in rows] == [j["status"] for j in listed]
    expected = [j.pk for j in jobs if j.status in ("finished", "failed") and "a" in j.name]
    assert sorted(int(r["id"]) for r in rows) == sorted(expected) and rows


def test_an_export_holds_only_the_jobs_its_reader_may_see(client, api, users, jobs):
    alice = users["alice"]
    own = sorted(jobs.filter(owner=alice).values_list("pk", flat=True), reverse=True)
    client.force_login(alice)
    assert [int(r["id"]) for r in csv_rows(client.get("/jobs/?format=csv"))] == own
    exported = json.loads(body(api(alice).get(EXPORT)))
    assert [o["id"] for o in exported] == own
    assert {o["owner"] for o in exported} == {"alice"}
    assert json.loads(body(api(alice).get(EXPORT, {"owner": "bob"}))) == []
    assert api(None).get(EXPORT).status_code in (401, 403)


def test_an_export_streams_and_reads_no_job_before_it_is_sent(client, api, users, jobs):
    client.force_login(users["admin"])
    for get in (
        lambda: client.get("/jobs/", {"format": "json"}),
        lambda: api(users["admin"]).get(EXPORT, {"format": "csv"}),
    ):
        with CaptureQueriesContext(connection) as queries:
            r = get()
            assert r.status_code == 200 and r.streaming
            assert not [q for q in queries if '"matcher_job"' in q["sql"]]
            text = body(r)
        assert [q for q in queries if '"matcher_job"' in q["sql"]]
        assert str(jobs.order_by("-id")[0].pk) in text


def test_an_export_of_a_bad_query_answers_400_naming_the_parameter(client, api, users, jobs):
    client.force_login(users["admin"])
    r = client.get("/jobs/", {"format": "csv", "status": "bogus"})
    assert r.status_code == 400 and not r.streaming and "<b>status</b>" in r.content.decode()
    r = api(users["admin"]).get(EXPORT, {"format": "csv", "status": "bogus"})
    assert r.status_code == 400 and "status" in r.content.decode()
    r = api(users["admin"]).get(EXPORT, {"statuss": "finished"})
    assert r.status_code == 400 and "statuss" in r.json()
    assert client.get("/jobs/", {"format": "xml"}).status_code == 400


def test_an_export_written_in_many_pieces_is_still_one_csv_and_one_json_array(
    client, users, jobs, monkeypatch
):
    from web.core import listing

    monkeypatch.setattr(listing, "EXPORT_BATCH", 2)
    client.force_login(users["admin"])
    r = client.get("/jobs/", {"format": "json"})
    pieces = list(r.streaming_content)
    assert len(pieces) == 2 + 5  # "[", five pieces of at most two jobs, "]"
    assert [o["id"] for o in json.loads(b"".join(pieces))] == [j.pk for j in jobs.order_by("-id")]
    rows = csv_rows(client.get("/jobs/", {"format": "csv"}))
    assert [int(r["id"]) for r in rows] == [j.pk for j in jobs.order_by("-id")]


def test_a_name_a_spreadsheet_would_run_as_a_formula_is_exported_as_text(client, users, submit):
    job = submit("alice", name="=HYPERLINK(1)")
    client.force_login(users["alice"])
    rows = csv_rows(client.get("/jobs/", {"format": "csv"}))
    assert [r["name"] for r in rows if r["id"] == str(job.pk)] == ["'=HYPERLINK(1)"]
    as_json = json.loads(body(client.get("/jobs/", {"format": "json"})))
    assert [o["name"] for o in as_json if o["id"] == job.pk] == ["=HYPERLINK(1)"]
