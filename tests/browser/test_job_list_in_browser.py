"""The jobs list as a user works it: sort by clicking a column header, search,
apply a time range and a page size, then export CSV and find in it exactly what the API answers
for the same filters, and nothing of another user's."""

import csv
import io
from datetime import timedelta
from urllib.parse import urlsplit

import pytest

from core import clock
from matcher import services
from matcher.models import Job
from shares.models import User
from simulation import demo

pytestmark = pytest.mark.browser


@pytest.fixture
def jobs(transactional_db):
    """alice's jobs named run-* (some changed two days ago) and bob's, which she may not see."""
    demo.create_world()
    ids = {}
    for username in ("alice", "bob"):
        user = User.objects.get(username=username)
        spec = {"owner_group": user.grid_groups.get(), "setup": "LHCb-Production"}
        made = services.submit_jobs(
            user,
            [{**spec, "cpu_time": 100 * (1 + i % 5), "name": f"run-{i}"} for i in range(12)]
            + [{**spec, "cpu_time": 999, "name": "other"}],
        )
        ids[username] = [j.pk for j in made]
    old = ids["alice"][:4]
    Job.objects.filter(pk__in=old).update(status_changed=clock.now() - timedelta(days=2))
    return ids


def header_order(page) -> list[int]:
    return [int(t) for t in page.page.locator("table tbody tr td:nth-child(2) a").all_inner_texts()]


def test_sort_search_time_range_and_csv_export_match_the_api(page, jobs, tmp_path):
    page.login("alice", demo.USER_PASSWORD)
    page.goto("/jobs/")

    # Sort by CPU time: one click ascending, a second descending; ties broken by id.
    page.page.click('th a[data-sort="cpu_time"]')
    page.page.wait_for_selector('th[aria-sort="ascending"] a[data-sort="cpu_time"]')
    mine = Job.objects.filter(owner__username="alice")
    ascending = list(mine.order_by("cpu_time", "id").values_list("pk", flat=True))
    assert header_order(page) == ascending
    page.page.click('th a[data-sort="cpu_time"]')
    page.page.wait_for_selector('th[aria-sort="descending"] a[data-sort="cpu_time"]')
    assert header_order(page) == ascending[::-1]

    # Search, time range and page size on the form keep the sort.
    page.page.fill("#id_q", "run-")
    page.page.select_option("#id_period", "day")
    page.page.select_option("#id_page_size", "25")
    page.page.click("form.filters button[type=submit]")
    page.page.wait_for_load_state("load")
    query = urlsplit(page.page.url).query
    assert "ordering=-cpu_time" in query and "period=day" in query and "q=run-" in query
    shown = header_order(page)
    expected = list(
        mine.filter(name__startswith="run-", status_changed__gte=clock.now() - timedelta(days=1))
        .order_by("-cpu_time", "-id")
        .values_list("pk", flat=True)
    )
    assert shown == expected and len(shown) == 8
    page.screenshot("job-list-sorted-searched")

    with page.page.expect_download() as download:
        page.page.click("#export-csv")
    saved = tmp_path / "jobs.csv"
    download.value.save_as(saved)
    rows = list(csv.DictReader(io.StringIO(saved.read_text())))

    api_query = "&".join(p for p in query.split("&") if not p.startswith("page_size="))
    listed = page.page.request.get(f"{page.base_url}/api/v1/jobs/?{api_query}").json()
    exported = page.page.request.get(f"{page.base_url}/api/v1/jobs/export/?{api_query}").json()
    assert [int(r["id"]) for r in rows] == [j["id"] for j in listed["results"]] == expected
    assert [r["status"] for r in rows] == [j["status"] for j in listed["results"]]
    assert [r["cpu_time"] for r in rows] == [str(j["cpu_time"]) for j in listed["results"]]
    assert rows == [{k: "" if v is None else str(v) for k, v in o.items()} for o in exported]
    assert {r["owner"] for r in rows} == {"alice"}
    assert not {int(r["id"]) for r in rows} & set(jobs["bob"])
