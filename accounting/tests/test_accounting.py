"""The accounting: the cycle bins the running jobs and the jobs that ended per hour and per
(group, user, site, CE), each once; the page and the API show the same rows, the CSV exports
them, and a bad window or grouping is a 400 naming it."""

import csv
import io
import re
from datetime import timedelta

import pytest

from accounting.models import AccountingBin
from core import clock, gdpconfig
from core.cycles import run_cycle
from matcher.models import Job, JobStatusHistory

pytestmark = pytest.mark.django_db


def _running(job, site="LCG.CERN.ch", ce="ce504.cern.ch"):
    Job.objects.filter(pk=job.pk).update(status="running", site=site, grid_ce=ce)


def _ended(job, to, cpu=None, wall=None):
    Job.objects.filter(pk=job.pk).update(status=to, cpu_seconds=cpu, wall_seconds=wall)
    JobStatusHistory.objects.create(job=job, at=clock.now(), from_status="running", to_status=to)


def _cycle():
    run = run_cycle("accounting")
    assert run.status == "success", run.error
    return run


def test_the_running_jobs_are_sampled_into_their_hours_bin(submit):
    jobs = [submit("alice"), submit("alice"), submit("bob")]
    for job in jobs:
        _running(job)
    _running(submit("carol", owner_group="lhcb_mc"), site="LCG.PIC.es", ce="ce07.pic.es")
    _cycle()
    bins = {
        (b.user.username, b.site, b.ce): b.running_minutes
        for b in AccountingBin.objects.select_related("user")
    }
    assert bins == {
        ("alice", "LCG.CERN.ch", "ce504.cern.ch"): 2.0,
        ("bob", "LCG.CERN.ch", "ce504.cern.ch"): 1.0,
        ("carol", "LCG.PIC.es", "ce07.pic.es"): 1.0,
    }


def test_each_ended_job_is_counted_once_with_what_its_payload_reported(submit):
    done, broken = submit("alice"), submit("alice")
    for job in (done, broken):
        Job.objects.filter(pk=job.pk).update(site="LCG.CERN.ch", grid_ce="ce504.cern.ch")
    _ended(done, "finished", cpu=1800.0, wall=3600.0)
    _ended(broken, "failed")
    _cycle()  # the history is read one cycle behind
    assert sum(b.finished + b.failed for b in AccountingBin.objects.all()) == 0
    _cycle()
    _cycle()
    [row] = AccountingBin.objects.filter(site="LCG.CERN.ch")
    assert (row.finished, row.failed, row.cpu_seconds, row.wall_seconds) == (1, 1, 1800.0, 3600.0)


def test_bins_older_than_accounting_days_are_dropped(submit, users):
    gdpconfig.set_value("AccountingDays", 2)
    old = clock.now().replace(minute=0, second=0, microsecond=0) - timedelta(days=3)
    AccountingBin.objects.create(hour=old, group=users["alice"].grid_groups.get(),
                                 user=users["alice"], finished=5)  # fmt: skip
    assert _cycle().counts["dropped"] == 1
    assert not AccountingBin.objects.exists()


def _bins(users):
    hour = clock.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    group = users["alice"].grid_groups.get()
    AccountingBin.objects.create(
        hour=hour,
        group=group,
        user=users["alice"],
        site="LCG.CERN.ch",
        running_minutes=120,
        finished=3,
        failed=1,
        cpu_seconds=7200,
    )
    AccountingBin.objects.create(hour=hour, group=group, user=users["bob"], site="LCG.PIC.es",
                                 running_minutes=60, finished=1)  # fmt: skip


def test_the_page_groups_by_user_and_links_into_the_jobs_list(client, users):
    _bins(users)
    client.force_login(users["alice"])
    page = client.get("/accounting/?hours=24&group_by=user")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<tr data-key="alice"><td><a href="/jobs/?owner=alice">alice</a></td>' in html
    assert "75.0 %" in html  # alice: 3 finished of 4 ended
    assert html.count("plotly-graph-div") == 5  # running, finished, failed, CPU, CPU efficiency


def test_the_csv_export_is_the_apis_rows(client, users):
    _bins(users)
    client.force_login(users["alice"])
    exported = client.get("/accounting/?hours=24&group_by=site&format=csv")
    assert exported["Content-Disposition"].startswith("attachment")
    rows = list(csv.DictReader(io.StringIO(exported.content.decode())))
    api = client.get("/api/v1/accounting/?hours=24&group_by=site").json()
    assert [(r["key"], float(r["running"]), int(r["finished"]), float(r["cpu_hours"]))
            for r in rows] == [(r["key"], r["running"], r["finished"], r["cpu_hours"])
                               for r in api["rows"]]  # fmt: skip
    assert [r["key"] for r in api["rows"]] == ["LCG.CERN.ch", "LCG.PIC.es"]
    assert api["rows"][0]["running"] == 2.0 and api["rows"][0]["cpu_hours"] == 2.0


@pytest.mark.parametrize(
    ("query", "field"),
    [("hours=5", "hours"), ("hours=x", "hours"), ("group_by=planet", "group_by")],
)
def test_a_bad_window_or_grouping_is_a_400_naming_it(client, users, query, field):
    client.force_login(users["alice"])
    page = client.get(f"/accounting/?{query}")
    assert page.status_code == 400 and f"{field}:" in page.content.decode()
    api = client.get(f"/api/v1/accounting/?{query}")
    assert api.status_code == 400 and field in api.json()


def test_an_unknown_api_parameter_is_a_400(client, users):
    client.force_login(users["alice"])
    answer = client.get("/api/v1/accounting/?site=LCG.CERN.ch")
    assert answer.status_code == 400 and "site" in answer.json()


def test_a_window_over_two_days_is_drawn_per_day_and_listed_per_hour(client, users):
    _bins(users)
    client.force_login(users["alice"])
    html = client.get("/accounting/?hours=168&group_by=site").content.decode()
    assert "Jobs finished per day" in html
    assert "Jobs finished per hour" in client.get("/accounting/?hours=24").content.decode()
    rows = client.get("/api/v1/accounting/?hours=168&group_by=site").json()["rows"]
    assert len(rows) == 2 and all(r["hour"].endswith(":00:00Z") for r in rows)


def test_a_month_with_one_day_of_data_is_drawn_over_the_whole_month(client, users):
    _bins(users)
    client.force_login(users["alice"])
    html = client.get("/accounting/?hours=720&group_by=user").content.decode()
    hour = clock.now().replace(minute=0, second=0, microsecond=0)
    first = (hour - timedelta(hours=719)).date().isoformat()
    after = (hour + timedelta(days=1)).date().isoformat()
    ranges = re.findall(r'"range":\["(\d{4}-\d\d-\d\d)T[^"]*","(\d{4}-\d\d-\d\d)T', html)
    assert ranges.count((first, after)) == 5  # every chart, from the window's first day
