"""Pilots tell the truth about their time, and real work goes first on the local worker node.

A pilot offers the CPU time it has left in every match request, so it is given only jobs whose CPU
segment that covers; a payload it must stop because its own lifetime ends is a pilot failure: the
job is rescheduled with the pilot's reason, never failed "over its wall-clock limit". A pilot
offering the PayloadTags takes only jobs with an executable, and "why is it not running" names
what the pilots that could take a job are doing."""

import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from core import gdpconfig
from matcher.models import Job
from pilots.models import Pilot
from simulation.demo import LOCAL_CE, LOCAL_SITE, local_worker_node

ROOT = Path(__file__).resolve().parents[1]
SLEEPER = "import time; print('working', flush=True); time.sleep(60)"


def _pilot(url: str, token: str, max_seconds: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "pilot", "--url", url, "--token", token,
         "--site", "LCG.CERN.ch", "--ce", "ce504.cern.ch", "--heartbeat", "1",
         "--max-seconds", max_seconds],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_a_pilot_whose_lifetime_ends_during_a_payload_gives_the_job_back_to_be_rescheduled(
    live_server, submit, users
):
    # A 5 s segment: a pilot of 8 s takes the job, whose own limit (10 s) its lifetime cannot
    # cover, and the payload outlives both.
    gdpconfig.set_value("CPUSegments", [5, 500, 5000, 50000, 300000])
    job = submit(
        "alice",
        cpu_time=5,
        sites=["LCG.CERN.ch"],
        executable=sys.executable,
        arguments=["-c", SLEEPER],
    )
    token = Token.objects.get(user=users["pilot"]).key
    out = _pilot(live_server.url, token, "8")

    assert "0 jobs done, 0 failed, 1 lost at the end of its lifetime" in out.stdout
    job.refresh_from_db()
    assert (job.status, job.reschedule_count, job.pilot_reference) == ("activated", 1, "")
    assert job.status_reason.startswith("pilot failure: the pilot's lifetime ended ")
    assert "rescheduled automatically" in job.status_reason
    assert "wall-clock" not in job.status_reason
    history = [h.to_status for h in job.history.all()]
    assert history == ["activated", "sent", "starting", "running", "activated"]
    pilot = Pilot.objects.get(credential_user=users["pilot"])
    assert pilot.status == "Failed"
    last = pilot.history.last()
    assert last.reason.startswith(f"pilot failure: the pilot's lifetime ended during job {job.pk}")


@pytest.mark.django_db(transaction=True)
def test_a_pilot_with_less_time_left_than_a_jobs_cpu_segment_is_not_given_it(
    live_server, submit, users
):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])  # the 500 s segment
    token = Token.objects.get(user=users["pilot"]).key

    out = _pilot(live_server.url, token, "100")

    assert "0 jobs done, 0 failed" in out.stdout
    job.refresh_from_db()
    assert (job.status, job.pilot_reference) == ("activated", "")


def _match(api, users, reference: str, **extra):
    resource = {"site": LOCAL_SITE, "grid_ce": LOCAL_CE, "cpu_time": 3000, "tag": ["payload"]}
    body = {**resource, "pilot_reference": reference, **extra}
    return api(users["pilot"]).post("/api/v1/match/", body, format="json")


def _payload_job(api, users, username: str) -> int:
    body = {"executable": "/bin/echo", "arguments": ["hello"], "cpu_time": 60}
    answer = api(users[username]).post("/api/v1/jobs/", body, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()["id"]


@pytest.mark.django_db
def test_the_local_worker_nodes_pilots_take_payloads_and_leave_simulated_jobs(api, users, submit):
    local_worker_node("http://127.0.0.1:8000")
    simulated = submit("bob", cpu_time=100)  # no executable, no restriction: any CE may run it
    assert _match(api, users, "local-1").status_code == 204
    payload = _payload_job(api, users, "alice")
    taken = _match(api, users, "local-1")
    assert (taken.status_code, taken.json()["id"]) == (200, payload)
    assert Job.objects.get(pk=simulated.pk).status == "activated"


@pytest.mark.django_db
def test_why_a_payload_waits_names_what_the_local_pilots_are_doing(api, users):
    from web.matcher.why import explain

    local_worker_node("http://127.0.0.1:8000")
    for n in range(2):
        _payload_job(api, users, "bob")
        assert _match(api, users, f"local-{n}").status_code == 200
    assert _match(api, users, "local-idle").status_code == 204  # it stays, between jobs
    mine = Job.objects.get(pk=_payload_job(api, users, "alice"))

    matching = next(p for p in explain(mine)["parts"] if p.title == "Matching")
    lines = [text for text, _url in matching.lines]
    assert (
        f"3 pilots run at {LOCAL_SITE} / {LOCAL_CE}, 2 running other users' jobs, "
        "1 between jobs (asking for one, or ending)." in lines
    )
    assert any("at least 500 s of CPU time left" in line for line in lines)


@pytest.mark.django_db
def test_a_pilot_failure_past_max_rescheduling_fails_the_job_with_the_pilots_reason(api, users):
    local_worker_node("http://127.0.0.1:8000")
    gdpconfig.set_value("MaxRescheduling", 0)
    job_id = _payload_job(api, users, "alice")
    assert _match(api, users, "local-1").status_code == 200
    pilot = api(users["pilot"])
    path = f"/api/v1/jobs/{job_id}/status/"
    report = {"pilot_reference": "local-1", "status": "failed", "pilot_failure": True}
    refused = pilot.post(path, {**report, "status": "finished"}, format="json")
    assert refused.status_code == 400 and "pilot_failure" in refused.json()
    reason = "pilot failure: the pilot's lifetime ended 3 s into the payload"
    answer = pilot.post(path, {**report, "reason": reason}, format="json")
    assert answer.json() == {"id": job_id, "status": "failed"}
    job = Job.objects.get(pk=job_id)
    assert job.status_reason == f"{reason}; not rescheduled: MaxRescheduling (0) reached"
