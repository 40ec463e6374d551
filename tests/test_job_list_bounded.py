"""The jobs list finds a page at a cost bounded by the page, not by the history beneath it
(web.core.pagination's plans, web.matcher.job_ids), and answers exactly what it answered
before: a search by part of a name newest first looks among the newest ids, then among the
older ones through the name's index; a user's or a JobSharing member's list in a state is read
branch by branch (own jobs, each group's) from the owner/group/state indexes of matcher
migration 0021. The window of newest ids is made a few ids wide here, so that every page of
these few jobs is found partly by the walk, partly by the index."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from django.db import connection
from django.http import QueryDict

from matcher.models import Job
from matcher.services import rollups
from web.core import pagination
from web.matcher.facets import status_facets
from web.matcher.job_ids import JobIds

# (owner, group, name, status), oldest first: the term "needle" in old and in new jobs, a
# stretch of jobs without it between, "old-only" in the oldest jobs alone.
SPECS = [
    ("alice", "lhcb_user", "old-only-needle-1", "finished"),
    ("carol", "lhcb_mc", "old-only-needle-2", "failed"),
    ("erin", "lhcb_mc", "old-only-needle-3", "finished"),
    ("dave", "lhcb_data", "old-only-4", "finished"),
    ("carol", "lhcb_user", "old-only-needle-5", "finished"),
    ("bob", "lhcb_user", "OLD-ONLY-needle-6", "failed"),
    ("erin", "lhcb_mc", "old-only-needle-7", "finished"),
    *[("dave", "lhcb_data", f"filler-{i}", "finished") for i in range(8)],
    ("carol", "lhcb_mc", "plain-1", "finished"),
    ("erin", "lhcb_mc", "plain-2", "failed"),
    ("alice", "lhcb_user", "plain-3", "finished"),
    ("carol", "lhcb_mc", "new-NEEDLE-1", "activated"),
    ("alice", "lhcb_user", "new-needle-2", "finished"),
    ("erin", "lhcb_mc", "new-needle-3", "activated"),
    ("carol", "lhcb_user", "new-needle-4", "finished"),
]
WHO = ("admin", "alice", "carol")


@pytest.fixture
def history(submit, monkeypatch):
    monkeypatch.setattr(pagination, "RECENT_IDS", 3)
    for owner, group, name, status in SPECS:
        job = submit(owner, name=name, owner_group=group)
        Job.objects.filter(pk=job.pk).update(status=status)
    rollups.rebuild()
    with connection.cursor() as cur:
        cur.execute("ANALYZE matcher_job")


def expected(user, *, term: str = "", states=(), descending=True) -> list[int]:
    rows = Job.objects.visible_to(user).order_by("-id" if descending else "id")
    return [
        j.pk for j in rows if term.upper() in j.name.upper() and (not states or j.status in states)
    ]


def api_pages(api, user, params: dict) -> tuple[list[list[int]], dict]:
    """Every page of the API's answer, following `next`; and the last answer."""
    r = api(user).get("/api/v1/jobs/", params)
    assert r.status_code == 200, r.data
    pages = [[j["id"] for j in r.data["results"]]]
    while r.data["next"]:
        r = api(user).get(r.data["next"])
        pages.append([j["id"] for j in r.data["results"]])
    return pages, r.data


def page_ids(response) -> list[int]:
    return [int(i) for i in re.findall(r'<td><a href="/jobs/(\d+)/">', response.content.decode())]


@pytest.mark.parametrize("who", WHO)
@pytest.mark.parametrize("term", ["needle", "old-only-needle", "NEEDLE-1", "no-such-name"])
def test_a_search_answers_the_same_jobs_in_the_same_order_on_every_page_of_the_api(
    api, users, history, who, term
):
    user = users[who]
    want = expected(user, term=term)
    pages, last = api_pages(api, user, {"q": term, "page_size": 2})
    assert [pk for page in pages for pk in page] == want
    assert all(len(page) == 2 for page in pages[:-1])
    # And back again, page by page, through the previous links.
    back = [pages[-1]]
    while last["previous"]:
        last = api(user).get(last["previous"]).data
        back.append([j["id"] for j in last["results"]])
    assert back[::-1] == pages if len(pages) > 1 else True
    counted = api(user).get("/api/v1/jobs/", {"q": term, "count": "true"}).data
    assert counted["count"] == len(want)


@pytest.mark.parametrize("who", WHO)
def test_a_search_oldest_first_answers_the_same_jobs_in_the_same_order(api, users, history, who):
    user = users[who]
    pages, _ = api_pages(api, user, {"q": "needle", "ordering": "id", "page_size": 3})
    assert [pk for page in pages for pk in page] == expected(user, term="needle", descending=False)


@pytest.mark.parametrize("who", WHO)
@pytest.mark.parametrize("term", ["needle", "old-only-needle"])
def test_a_search_answers_the_same_jobs_in_the_same_order_on_every_page_of_the_page(
    client, users, history, who, term
):
    user = users[who]
    client.force_login(user)
    want = expected(user, term=term)
    got, number = [], 1
    while True:
        r = client.get("/jobs/", {"q": term, "page_size": 2, "page": number})
        assert r.status_code == 200
        got += page_ids(r)
        if f"page={number + 1}" not in r.content.decode():
            break
        number += 1
    assert got == want
    assert r.context["page"].total == len(want)


@pytest.mark.parametrize("who", WHO)
@pytest.mark.parametrize("page_size", [2, 50])
def test_the_facets_of_a_search_count_the_states_of_the_jobs_it_finds(
    users, history, who, page_size
):
    user = users[who]
    query = QueryDict(mutable=True)
    query.update({"q": "needle", "page_size": page_size})
    plan = JobIds(user, query)
    visible = Job.objects.visible_to(user)
    plan.ids(visible.filter(name__icontains="needle"), page_size + 1)  # as the page does first
    facets, scanned = status_facets(query, visible, user, plan)
    states = Counter(
        Job.objects.filter(pk__in=expected(user, term="needle")).values_list("status", flat=True)
    )
    assert {f.state: f.count for f in facets} == {"": sum(states.values()), **states}
    assert scanned == 0


@pytest.mark.parametrize("who", WHO)
@pytest.mark.parametrize("states", [["finished"], ["finished", "failed"], ["activated"]])
def test_a_list_in_a_state_answers_a_users_and_her_groups_jobs_newest_first_page_by_page(
    api, users, history, who, states
):
    user = users[who]
    pages, _ = api_pages(api, user, {"status": states, "page_size": 2})
    assert [pk for page in pages for pk in page] == expected(user, states=states)
    counted = api(user).get("/api/v1/jobs/", {"status": states, "count": "true"}).data
    assert counted["count"] == len(expected(user, states=states))


@pytest.mark.parametrize("who", ["alice", "carol"])
def test_a_users_whole_list_answers_her_own_and_her_groups_jobs_newest_first(
    api, client, users, history, who
):
    user = users[who]
    pages, _ = api_pages(api, user, {"page_size": 3})
    assert [pk for page in pages for pk in page] == expected(user)
    client.force_login(user)
    assert page_ids(client.get("/jobs/", {"status": "finished"})) == expected(
        user, states=["finished"]
    )


def test_a_plan_leaves_the_planner_settings_as_they_were_inside_a_callers_transaction(
    users, history
):
    names = ["enable_bitmapscan", "enable_indexscan", "enable_seqscan", "cpu_index_tuple_cost"]

    def settings():
        with connection.cursor() as cur:
            cur.execute("SELECT " + ", ".join(["current_setting(%s)"] * len(names)), names)
            return cur.fetchone()

    before = settings()
    visible = Job.objects.visible_to(users["carol"])
    found = pagination.searched_ids(visible.filter(name__icontains="needle"), 4)
    assert found == expected(users["carol"], term="needle")[:4]
    assert settings() == before


def test_the_owner_and_group_state_indexes_exist_for_the_lists_branches(db):
    with connection.cursor() as cur:
        cur.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'matcher_job' "
            "AND indexname IN ('job_owner_status_id', 'job_group_status_id')"
        )
        found = dict(cur.fetchall())
    assert "(owner_id, status, id) INCLUDE (owner_group_id)" in found["job_owner_status_id"]
    assert "(owner_group_id, status, id) INCLUDE (owner_id)" in found["job_group_status_id"]


def test_the_newest_matches_are_found_by_a_walk_and_only_old_ones_through_the_name_index(
    api, users, history
):
    from django.test.utils import CaptureQueriesContext

    def plans(term: str) -> set[str]:
        with CaptureQueriesContext(connection) as seen:
            r = api(users["admin"]).get("/api/v1/jobs/", {"q": term, "page_size": 2})
        assert r.status_code == 200
        sql = " ".join(q["sql"] for q in seen.captured_queries)
        return {
            name
            for name, marker in (("walk", "'enable_bitmapscan'"), ("index", "'enable_indexscan'"))
            if marker in sql
        }

    assert plans("new-needle") == {"walk"}
    assert plans("old-only-needle") == {"walk", "index"}
