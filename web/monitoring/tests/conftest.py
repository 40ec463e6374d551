"""A small world for the summaries: jobs ended at chosen sites the way pilots end them."""

import pytest
from django.test import Client

from matcher import dispatcher, services
from matcher.matching import Resource
from matcher.models import JobStatus


@pytest.fixture
def end(submit):
    """end(username, site, outcome, reason="", **fields) -> the job, submitted and then run by
    a pilot at `site` that reports `outcome` (finished, failed; running leaves it running)."""

    def run(username, site, outcome=JobStatus.FINISHED, reason="", **fields):
        job = submit(username, **fields)
        taken = dispatcher.match_job(
            Resource(site=site, setup="any", cpu_time=10**6), f"p-{job.pk}"
        )
        assert taken is not None and taken.job.id == job.pk, taken
        services.report_job(job.pk, JobStatus.RUNNING, "started")
        if outcome != JobStatus.RUNNING:
            services.report_job(job.pk, outcome, reason or f"ended {outcome}")
        return job

    return run


@pytest.fixture
def page():
    """page(user, url) -> the response of a signed-in browser."""

    def get(user, url):
        client = Client()
        client.force_login(user)
        return client.get(url)

    return get
