"""The error summary by error code and category, and its site x error view: failed jobs
counted per site and error category (PanDA pilot error codes, matcher.errors)."""

import pytest

from matcher import dispatcher, errors, services
from matcher.matching import Resource
from matcher.models import JobStatus
from web.monitoring import error_summary

pytestmark = pytest.mark.django_db


@pytest.fixture
def fail(submit):
    """fail(username, site, **results) -> a job run at `site` and reported failed."""

    def run(username, site, reason="failed", **results):
        job = submit(username)
        taken = dispatcher.match_job(Resource(site=site, setup="any", cpu_time=10**6), "p")
        assert taken is not None and taken.job.id == job.pk
        services.report_job(job.pk, JobStatus.RUNNING, "started")
        return services.report_job(job.pk, JobStatus.FAILED, reason, results=results)

    return run


@pytest.fixture
def failed(fail):
    return [
        fail("alice", "LCG.CERN.ch", error_code=1099),
        fail("alice", "LCG.CERN.ch", error_code=1099),
        fail("alice", "LCG.CERN.ch", error_code=1212, exit_code=137),
        fail("alice", "LCG.PIC.es", error_code=1151),
        fail("alice", "LCG.PIC.es", exit_code=3),
        fail("alice", "LCG.PIC.es"),  # nothing says why
        fail("bob", "LCG.PIC.es", error_code=1099),
    ]


def test_failed_jobs_get_the_code_their_pilot_gave_or_one_from_their_exit_code(failed):
    codes = [(j.error_code, j.error_category) for j in failed]
    assert codes[0] == (1099, "stage-in") and codes[2] == (1212, "memory")
    assert codes[4] == (1305, "payload")  # exit code 3: a payload failure
    assert codes[5] == (None, "")


def test_the_summary_counts_failed_jobs_by_code_and_by_category(users, failed):
    found = error_summary.summary(users["alice"], 24)
    by_code = {g.key: g.count for g in found.by_code}
    assert by_code == {"1099": 2, "1212": 1, "1151": 1, "1305": 1, "": 1}
    assert found.by_code[0].label == "1099 Failed to transfer file in (stage-in)"
    by_category = {g.label: g.count for g in found.by_category}
    assert by_category == {"stage-in": 3, "memory": 1, "payload": 1, "no error code": 1}


def test_the_site_x_error_view_counts_each_sites_failures_per_category(users, failed):
    matrix = error_summary.summary(users["alice"], 24).matrix
    assert matrix.categories == ["stage-in", "payload", "memory", "no error code"]
    rows = {r.site: dict(zip(matrix.categories, r.cells, strict=True)) for r in matrix.rows}
    assert rows == {
        "LCG.CERN.ch": {"stage-in": 2, "payload": 0, "memory": 1, "no error code": 0},
        "LCG.PIC.es": {"stage-in": 1, "payload": 1, "memory": 0, "no error code": 1},
    }
    assert matrix.totals == [3, 1, 1, 1] and matrix.total == 6
    staff = error_summary.summary(users["admin"], 24).matrix
    assert staff.total == 7  # bob's too


def test_the_page_and_the_api_show_the_codes_and_the_site_x_error_view(users, failed, api):
    from django.test import Client

    client = Client()
    client.force_login(users["alice"])
    html = client.get("/monitoring/errors/").content.decode()
    assert 'id="by-code"' in html and "1099 Failed to transfer file in (stage-in)" in html
    assert 'id="site-error-matrix"' in html and 'data-site="LCG.PIC.es"' in html
    body = api(users["alice"]).get("/api/v1/monitoring/errors/").json()
    assert {g["key"]: g["count"] for g in body["by_category"]}["stage-in"] == 3
    cern = next(r for r in body["site_errors"] if r["site"] == "LCG.CERN.ch")
    assert cern["counts"] == {"stage-in": 2, "payload": 0, "memory": 1, "no error code": 0}


def test_an_unknown_code_a_pilot_gives_is_kept_in_category_other(fail):
    job = fail("alice", "LCG.CERN.ch", error_code=4242)
    assert (job.error_code, job.error_category) == (4242, errors.OTHER)


def test_a_rescheduled_job_loses_its_last_attempts_error(fail, users):
    job = fail("alice", "LCG.CERN.ch", error_code=1099)
    services.reschedule_job(job.pk, users["alice"])
    job.refresh_from_db()
    assert (job.error_code, job.error_category, job.status) == (None, "", "activated")


def test_a_code_or_category_row_links_to_the_jobs_list_filtered_by_it(users, failed):
    from django.test import Client

    found = error_summary.summary(users["alice"], 24)
    stage_in = next(g for g in found.by_code if g.key == "1099")
    assert "error_code=1099" in stage_in.url and "status=failed" in stage_in.url
    client = Client()
    client.force_login(users["alice"])
    listed = client.get(stage_in.url).content.decode()
    ids = {j.pk for j in failed if j.error_code == 1099 and j.owner.username == "alice"}
    assert ids and all(f'href="/jobs/{pk}/"' in listed for pk in ids)
    other = next(j for j in failed if j.error_code == 1212)
    assert f'href="/jobs/{other.pk}/"' not in listed
    category = next(g for g in found.by_category if g.key == "memory")
    assert "error_category=memory" in category.url
    assert f'href="/jobs/{other.pk}/"' in client.get(category.url).content.decode()
    assert client.get("/jobs/?error_code=abc").status_code == 400
