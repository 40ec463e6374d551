from django.db import connection
from django.test.utils import CaptureQueriesContext

from matcher.models import Job, JobStatus
from web.monitoring import job_summary


def _world(submit, end):
    end("alice", "LCG.CERN.ch", JobStatus.FINISHED)
    end("alice", "LCG.CERN.ch", JobStatus.FINISHED)
    end("alice", "LCG.CERN.ch", JobStatus.FINISHED)
    end("alice", "LCG.CERN.ch", JobStatus.FAILED, "exit code 3")
    end("alice", "LCG.PIC.es", JobStatus.FAILED, "exit code 1")
    end("alice", "LCG.PIC.es", JobStatus.RUNNING)
    submit("alice")
    submit("alice")


def _row(summary, site):
    [row] = [r for r in summary.rows if r.site == site]
    return {s: c.count for s, c in zip(summary.states, row.cells, strict=True)}, row


def test_jobs_are_counted_per_site_and_state_with_unplaced_jobs_as_not_placed(users, submit, end):
    _world(submit, end)
    found = job_summary.summary(users["alice"])

    assert found.states == ["activated", "running", "finished", "failed"]
    cern, _ = _row(found, "LCG.CERN.ch")
    pic, _ = _row(found, "LCG.PIC.es")
    waiting, row = _row(found, "")
    assert cern == {"activated": 0, "running": 0, "finished": 3, "failed": 1}
    assert pic == {"activated": 0, "running": 1, "finished": 0, "failed": 1}
    assert waiting["activated"] == 2 and row.label == "not placed"
    assert [r.site for r in found.rows][-1] == ""  # not placed comes last
    assert [c.count for c in found.totals] == [2, 1, 3, 2]
    assert found.total.count == 8 == sum(r.total.count for r in found.rows)


def test_efficiency_is_finished_over_finished_and_failed_per_site_and_overall(users, submit, end):
    _world(submit, end)
    found = job_summary.summary(users["alice"])

    assert _row(found, "LCG.CERN.ch")[1].efficiency == 0.75
    assert _row(found, "LCG.PIC.es")[1].efficiency == 0.0
    assert _row(found, "")[1].efficiency is None  # nothing ended there
    assert found.efficiency == 0.6


def test_each_cell_opens_the_jobs_list_with_its_site_and_status_showing_its_jobs(
    users, submit, end, page
):
    _world(submit, end)
    found = job_summary.summary(users["alice"])
    _, cern = _row(found, "LCG.CERN.ch")
    finished = cern.cells[found.states.index("finished")]
    assert finished.url == "/jobs/?placed=LCG.CERN.ch&status=finished"

    listed = page(users["alice"], finished.url)
    assert listed.status_code == 200
    shown = {j.pk for j in listed.context["page"].rows}
    expected = Job.objects.filter(site="LCG.CERN.ch", status="finished")
    assert shown == set(expected.values_list("pk", flat=True)) and len(shown) == finished.count
    assert found.totals[found.states.index("failed")].url == "/jobs/?status=failed"
    assert cern.total.url == "/jobs/?placed=LCG.CERN.ch"


def test_another_users_jobs_are_never_counted_for_a_non_staff_user(users, submit, end):
    end("bob", "LCG.CERN.ch", JobStatus.FAILED)  # first: a pilot takes any waiting job
    _world(submit, end)
    submit("bob")

    alice = job_summary.summary(users["alice"])
    bob = job_summary.summary(users["bob"])
    staff = job_summary.summary(users["admin"])

    assert alice.total.count == 8
    assert _row(alice, "LCG.CERN.ch")[0]["failed"] == 1
    assert bob.total.count == 2 and _row(bob, "LCG.CERN.ch")[0] == {
        "activated": 0,
        "failed": 1,
    }
    assert staff.total.count == 10


def test_the_page_and_the_api_show_the_same_numbers(users, submit, end, page, api):
    _world(submit, end)
    body = api(users["alice"]).get("/api/v1/monitoring/job-summary/").json()
    html = page(users["alice"], "/monitoring/jobs/")

    assert html.status_code == 200
    found = html.context["summary"]
    assert body["states"] == found.states
    assert body["totals"]["total"] == found.total.count == 8
    for row, site in zip(found.rows, body["sites"], strict=True):
        assert site["site"] == row.site
        assert list(site["counts"].values()) == [c.count for c in row.cells]
        assert site["efficiency"] == row.efficiency
    assert b'href="/jobs/?placed=LCG.CERN.ch&amp;status=finished">3</a>' in html.content


def test_the_matrix_takes_the_same_queries_for_few_jobs_as_for_many(users, submit, end):
    end("alice", "LCG.CERN.ch", JobStatus.FAILED)
    with CaptureQueriesContext(connection) as few:
        job_summary.summary(users["alice"])
    for _ in range(10):
        end("alice", "LCG.PIC.es", JobStatus.FINISHED)
    for _ in range(10):
        submit("alice")
    with CaptureQueriesContext(connection) as many:
        job_summary.summary(users["alice"])
    assert len(many) == len(few) <= 2
