"""A real pilot process finishes real jobs over HTTP against a live server: the director's
local backend starts `manage.py pilot`, which matches, reports and runs the jobs."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import clock, gdpconfig
from core.cycles import run_cycle
from matcher.models import Job
from pilots.models import Pilot

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.django_db(transaction=True)


def _wait_for(predicate, seconds=90):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def test_the_local_backend_starts_real_pilots_that_finish_jobs(live_server, submit):
    for _ in range(3):
        submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value("DefaultSubmitPools", ["Local"])
    gdpconfig.set_value("pilotsPerIteration", 2.0)
    gdpconfig.set_value("LocalPilotURL", live_server.url)
    gdpconfig.set_value("LocalPilotMaxSeconds", 600)  # covers the 500 s CPU segment
    run = run_cycle("director")
    assert run.status == "success", run.error
    assert Pilot.objects.filter(grid_type="Local").exists()
    assert _wait_for(lambda: Job.objects.filter(status="finished").count() == 3)
    job = Job.objects.first()
    assert [h.to_status for h in job.history.all()] == [
        "activated",
        "sent",
        "starting",
        "running",
        "finished",
    ]
    assert job.heartbeat is not None
    assert _wait_for(lambda: not Pilot.objects.exclude(status="Done").exists(), 30)


def test_a_pilot_run_by_hand_reports_only_its_own_jobs(live_server, submit, users):
    from rest_framework.authtoken.models import Token

    mine = submit("alice", cpu_time=100)
    token = Token.objects.get(user=users["pilot"]).key
    out = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "pilot",
            "--url",
            live_server.url,
            "--token",
            token,
            "--site",
            "LCG.CERN.ch",
            "--ce",
            "ce504.cern.ch",
            "--max-seconds",
            "600",  # its time left covers the job's CPU segment (500 s)
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "1 jobs done" in out.stdout
    mine.refresh_from_db()
    assert mine.status == "finished"
    # Another credential cannot report on that job.
    from rest_framework.test import APIClient

    other = APIClient()
    other.force_authenticate(users["bob"])
    r = other.post(
        f"/api/v1/jobs/{mine.pk}/status/",
        {"status": "failed", "pilot_reference": mine.pilot_reference},
        format="json",
    )
    assert r.status_code == 403


def test_the_demos_local_worker_node_runs_a_newcomers_hello_job(live_server, users, api):
    """The user guide's example on `make run`: a job with only an executable, arguments and a CPU
    time goes to the Local pool's real pilots (never to a simulated one) and its stdout reads
    hello."""
    from simulation.demo import local_worker_node

    local_worker_node(live_server.url)
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value("LocalPilotMaxSeconds", 600)  # covers the 500 s CPU segment
    alice = api(users["alice"])
    answer = alice.post(
        "/api/v1/jobs/",
        {"executable": "/bin/echo", "arguments": ["hello"], "cpu_time": 60},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    job_id = answer.json()["id"]
    # A simulated pilot at a CE of the grid does not take it: it needs the payload tag.
    generic = api(users["pilot"])
    resource = {"site": "LCG.CERN.ch", "grid_ce": "ce504.cern.ch", "cpu_time": 86400}
    assert generic.post("/api/v1/match/", resource, format="json").status_code == 204
    run = run_cycle("director")
    assert run.status == "success", run.error
    assert Pilot.objects.filter(grid_type="Local", ce="localhost").exists()
    assert _wait_for(lambda: Job.objects.get(pk=job_id).status == "finished")
    job = Job.objects.get(pk=job_id)
    assert (job.site, job.exit_code) == ("DIRAC.Local.ch", 0)
    log = alice.get(f"/api/v1/jobs/{job_id}/log/?stream=stdout")
    body = b"".join(log.streaming_content) if log.streaming else log.content
    assert body == b"hello\n"


def test_a_local_pilot_that_dies_before_registering_is_aborted_with_its_last_words_and_replaced(
    users, api
):
    """A local pilot that cannot reach the server exits; the next director cycle counts it as
    never coming (Aborted, its exit code and last output line as the reason) and sends another
    to the payload job's TaskQueue, which would otherwise stay "over its cap" forever."""
    from pilots import local_pilots
    from simulation.demo import local_worker_node

    local_worker_node("http://127.0.0.1:9")  # nothing listens there
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    answer = api(users["alice"]).post(
        "/api/v1/jobs/",
        {"executable": "/bin/echo", "arguments": ["hello"], "cpu_time": 60},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert run_cycle("director").status == "success"
    [first] = Pilot.objects.filter(grid_type="Local")
    assert first.status == "Submitted"
    assert _wait_for(
        lambda: local_pilots.exit_code(local_pilots.output_tail(first.reference) or "") is not None
    )
    assert local_pilots.exit_code(local_pilots.output_tail(first.reference)) != 0

    assert run_cycle("director").status == "success"
    first.refresh_from_db()
    assert first.status == "Aborted"
    reason = first.history.order_by("-at").first().reason
    assert reason.startswith("its process exited (code 1) before registering: ")
    assert "no output" not in reason
    assert Pilot.objects.filter(grid_type="Local", status="Submitted").exclude(pk=first.pk)
    # Staff read what the process said on the pilot's page.
    from django.test import Client

    page = Client()
    page.force_login(users["admin"])
    html = page.get(f"/pilots/{first.pk}/").content.decode()
    assert 'id="process-output"' in html and "pilot process exited with code 1" in html


def test_a_local_pilot_silent_past_its_start_time_is_aborted_but_a_young_one_is_left(submit):
    from datetime import timedelta

    from matcher.models import TaskQueue
    from pilots import local_pilots
    from pilots.services import end_unstarted_local_pilots

    gdpconfig.set_value("LocalPilotStartSeconds", 60)
    tq = TaskQueue.objects.get(pk=submit("alice").task_queue_id)
    now = clock.now()
    pilots = {}
    for name, age in (("old", 300), ("young", 10)):
        reference = f"local://localhost/{name}"
        pilots[name] = Pilot.objects.create(
            reference=reference,
            task_queue_id=tq.pk,
            grid_type="Local",
            submit_pool="Local",
            status="Submitted",
            submitted=now - timedelta(seconds=age),
            status_changed=now - timedelta(seconds=age),
        )
        local_pilots.log_path(reference).parent.mkdir(parents=True, exist_ok=True)
        local_pilots.log_path(reference).write_text("starting\n")

    assert end_unstarted_local_pilots() == 1
    for p in pilots.values():
        p.refresh_from_db()
    assert pilots["old"].status == "Aborted"
    assert pilots["old"].history.get().reason == "it did not register within 60 s"
    assert pilots["young"].status == "Submitted"


def test_a_panda_pilot_whose_launcher_died_before_starting_it_is_aborted(submit):
    from matcher.models import TaskQueue
    from pilots import local_pilots
    from pilots.services import end_unstarted_local_pilots

    tq = TaskQueue.objects.get(pk=submit("alice").task_queue_id)
    now = clock.now()
    reference = "panda://ce.example/launcher-died"
    pilot = Pilot.objects.create(
        reference=reference,
        task_queue_id=tq.pk,
        grid_type="PanDA",
        submit_pool="PanDA",
        status="Submitted",
        submitted=now,
        status_changed=now,
    )
    log = local_pilots.log_path(f"{reference}-launcher")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"Traceback: no such queue\n{local_pilots.EXIT_LINE}1\n")

    assert end_unstarted_local_pilots() == 1
    pilot.refresh_from_db()
    assert pilot.status == "Aborted"
    assert "exited (code 1)" in pilot.history.get().reason
