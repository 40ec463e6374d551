"""Sandbox files go with their job when the retention cycle purges it, and on their own once
older than SandboxRetentionDays; the stored files too, once the deletion commits."""

import json

import pytest

from core import clock, gdpconfig
from matcher import services as job_services
from matcher.models import Job
from retention.services import run_retention
from sandboxes.models import SandboxFile
from sandboxes.tests.conftest import JOB, stored_files, upload

pytestmark = pytest.mark.django_db

DAY = 86400


def _job_with_files(api, users) -> int:
    form = {"job": json.dumps(JOB), "input_sandbox": [upload("a.txt"), upload("b.txt")]}
    r = api(users["alice"]).post("/api/v1/jobs/", form, format="multipart")
    assert r.status_code == 201, r.content
    return r.json()["id"]


def test_a_purged_jobs_files_go_with_it(
    api, users, sandbox_root, django_capture_on_commit_callbacks
):
    gdpconfig.set_value("RetentionJobDays", 7)
    gdpconfig.set_value("SandboxRetentionDays", 0)  # only with the job
    job_id = _job_with_files(api, users)
    job_services.kill_job(job_id, users["admin"])
    assert len(stored_files(sandbox_root)) == 2
    clock.advance(8 * DAY)
    with django_capture_on_commit_callbacks(execute=True):
        tally = run_retention()
    assert tally.deleted["jobs"] == 1
    assert not Job.objects.exists() and not SandboxFile.objects.exists()
    assert stored_files(sandbox_root) == []


def test_files_older_than_their_age_go_and_their_job_stays(
    api, users, sandbox_root, django_capture_on_commit_callbacks
):
    gdpconfig.set_value("SandboxRetentionDays", 30)
    old = _job_with_files(api, users)
    clock.advance(20 * DAY)
    young = _job_with_files(api, users)
    clock.advance(11 * DAY)
    with django_capture_on_commit_callbacks(execute=True):
        tally = run_retention()
    assert tally.deleted["sandbox_files"] == 2
    assert set(SandboxFile.objects.values_list("job_id", flat=True)) == {young}
    assert Job.objects.filter(pk=old).exists()
    assert len(stored_files(sandbox_root)) == 2
