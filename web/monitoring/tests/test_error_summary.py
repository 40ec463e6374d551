from datetime import timedelta

import pytest

from brokerage.models import Task, TaskJob
from core import clock
from matcher.models import Job, JobStatus
from matcher.services import rollups
from web.monitoring import error_summary


@pytest.fixture
def failures(users, submit, end):
    """alice: three failed at CERN (two of one task), one at PIC, one three hours ago, one
    finished; bob: one failed at CERN."""
    now = clock.now()
    task = Task.objects.create(
        name="mc", owner=users["alice"], owner_group=users["alice"].grid_groups.get(),
        status="running", created=now, modified=now,
    )  # fmt: skip
    jobs = {
        "a": end("alice", "LCG.CERN.ch", JobStatus.FAILED, "exit code 3"),
        "b": end("alice", "LCG.CERN.ch", JobStatus.FAILED, "exit code 3"),
        "c": end("alice", "LCG.CERN.ch", JobStatus.FAILED, "out of memory"),
        "d": end("alice", "LCG.PIC.es", JobStatus.FAILED, "exit code 3"),
        "old": end("alice", "LCG.PIC.es", JobStatus.FAILED, "exit code 9"),
        "ok": end("alice", "LCG.CERN.ch", JobStatus.FINISHED),
        "bob": end("bob", "LCG.CERN.ch", JobStatus.FAILED, "bob's reason"),
    }
    TaskJob.objects.create(job=jobs["a"], task=task)
    TaskJob.objects.create(job=jobs["b"], task=task)
    Job.objects.filter(pk=jobs["old"].pk).update(status_changed=now - timedelta(hours=3))
    rollups.rebuild()  # the summary reads the failed jobs' counts: recounted after the hand edits
    return {"task": task, **jobs}


def _groups(rows):
    return {g.key: g.count for g in rows}


def test_failed_jobs_in_the_window_are_grouped_by_reason_site_task_and_user(users, failures):
    found = error_summary.summary(users["alice"], 1)

    assert found.total == 4
    assert _groups(found.by_reason) == {"exit code 3": 3, "out of memory": 1}
    assert found.by_reason[0].example_job == failures["a"].pk
    assert _groups(found.by_site) == {"LCG.CERN.ch": 3, "LCG.PIC.es": 1}
    assert _groups(found.by_task) == {str(failures["task"].pk): 2, "": 2}
    assert _groups(found.by_user) == {"alice": 4}
    assert sum(n for _at, n in found.histogram) == 4 and found.bucket == "minute"


def test_a_wider_window_takes_in_older_failures(users, failures):
    day = error_summary.summary(users["alice"], 24)
    assert day.total == 5 and _groups(day.by_reason)["exit code 9"] == 1
    assert day.bucket == "hour" and len(day.histogram) in (1, 2, 3, 4)


def test_links_open_the_jobs_list_filtered_like_the_group(users, failures, page):
    found = error_summary.summary(users["alice"], 1)
    since = found.url.split("since=")[1]
    [cern] = [g for g in found.by_site if g.key == "LCG.CERN.ch"]
    assert cern.url == f"/jobs/?status=failed&since={since}&placed=LCG.CERN.ch"
    [task] = [g for g in found.by_task if g.key]
    assert task.url.endswith(f"&task={failures['task'].pk}")

    for group, expected in ((cern, 3), (task, 2), (found.by_user[0], 4)):
        listed = page(users["alice"], group.url)
        assert listed.status_code == 200, group.url
        assert len(listed.context["page"].rows) == expected, group.url


def test_another_users_failures_are_never_counted_for_a_non_staff_user(users, failures):
    alice = error_summary.summary(users["alice"], 24)
    staff = error_summary.summary(users["admin"], 24)
    assert "bob" not in _groups(alice.by_user) and "bob's reason" not in _groups(alice.by_reason)
    assert staff.total == 6 and _groups(staff.by_user) == {"alice": 5, "bob": 1}


@pytest.mark.parametrize(
    "bad", ["abc", "0", "-1", "1.5", "745", "9" * 30, "\u00b2", "\uff11\uff12"]
)
def test_a_bad_window_is_a_400_naming_hours_on_the_page_and_in_the_api(users, page, api, bad):
    html = page(users["alice"], f"/monitoring/errors/?hours={bad}")
    assert html.status_code == 400
    assert b"hours must be a whole number of hours from 1 to 744" in html.content

    answer = api(users["alice"]).get("/api/v1/monitoring/errors/", {"hours": bad})
    assert answer.status_code == 400
    assert "hours must be a whole number" in answer.json()["hours"][0]


def test_an_unknown_parameter_is_a_400_naming_it(users, api):
    answer = api(users["alice"]).get("/api/v1/monitoring/errors/", {"hour": "1"})
    assert answer.status_code == 400 and "hour" in answer.json()


def test_the_page_and_the_api_show_the_same_numbers(users, failures, page, api):
    body = api(users["alice"]).get("/api/v1/monitoring/errors/?hours=24").json()
    html = page(users["alice"], "/monitoring/errors/?hours=24")

    assert html.status_code == 200
    found = html.context["summary"]
    assert body["total"] == found.total == 5 and body["hours"] == 24
    for name in ("by_reason", "by_site", "by_task", "by_user"):
        assert {g["key"]: g["count"] for g in body[name]} == _groups(getattr(found, name))
    assert [h["failed"] for h in body["histogram"]] == [n for _at, n in found.histogram]
    assert b'data-chart="chart-' in html.content  # the histogram is drawn


def test_the_window_defaults_to_a_day(users, failures, api):
    assert api(users["alice"]).get("/api/v1/monitoring/errors/").json()["hours"] == 24


def test_each_reason_links_to_exactly_its_failed_jobs(users, failures, api):
    from web.monitoring.error_summary import summary

    client = api(users["alice"])
    for group in summary(users["alice"], 24).by_reason:
        assert "reason=" in group.url
        listed = client.get("/api/v1" + group.url).json()["results"]
        assert len(listed) == group.count
        assert {j["status_reason"] for j in listed} == {group.key}


@pytest.fixture
def simulated_clock(settings):
    settings.SIMULATED_CLOCK = True
    clock.invalidate()
    yield
    clock.invalidate()


@pytest.mark.parametrize("hours", [1, 24, 720])
def test_the_page_and_the_api_show_every_grouping_alike_for_each_user(
    simulated_clock, users, end, page, api, hours
):
    """Failures over two days (whole days, hours, and the part of an hour at the window's
    start): the page and the API give the same counts and example jobs, grouping by grouping,
    to staff, a user and a JobSharing member."""
    who = (("alice", {}), ("carol", {"owner_group": "lhcb_mc"}), ("erin", {}), ("bob", {}))
    sites = ("LCG.CERN.ch", "LCG.PIC.es")
    for step in range(6):
        clock.advance(9 * 3600 + 7 * 60)
        for username, fields in who:
            end(username, sites[step % 2], JobStatus.FAILED, f"reason {step % 3}", **fields)
    for name in ("admin", "alice", "carol"):
        user = users[name]
        body = api(user).get("/api/v1/monitoring/errors/", {"hours": hours}).json()
        html = page(user, f"/monitoring/errors/?hours={hours}")
        assert html.status_code == 200
        found = html.context["summary"]
        assert body["total"] == found.total > 0, name
        assert [h["failed"] for h in body["histogram"]] == [n for _at, n in found.histogram]
        for grouping in ("by_code", "by_category", "by_reason", "by_site", "by_task", "by_user"):
            shown = [(g.key, g.count, g.example_job) for g in getattr(found, grouping)]
            answered = [(g["key"], g["count"], g["example_job"]) for g in body[grouping]]
            assert answered == shown, (name, grouping)
        matrix = [(r.site, r.total) for r in found.matrix.rows]
        assert [(r["site"], r["total"]) for r in body["site_errors"]] == matrix, name
