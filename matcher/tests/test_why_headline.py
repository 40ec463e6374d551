""" "Why is it not running?" states the real blocker first: no CE can take the job (right
after it is submitted, not only on a later reload), or the director's own reason for sending
it no pilot; and a job that runs is headed by its state, not asked why it does not."""

import random

from core import gdpconfig
from core.cycles import run_cycle
from matcher import dispatcher
from matcher.models import Job, JobStatus
from matcher.tests.test_job_actions import put_in_state
from pilots.models import Credential
from web.matcher import why

URL = "/api/v1/jobs/"


def test_right_after_submitting_a_job_no_ce_can_take_the_page_says_so_first(
    api, users, submit, client, settings
):
    # A long-lived process: the matcher's TaskQueue cache is warm and not due for a refresh.
    settings.TASKQUEUE_VIEW_REFRESH_SECONDS = 3600.0
    submit("alice", cpu_time=100)
    dispatcher.taskqueue_definitions()
    r = api(users["alice"]).post(URL, {"cpu_time": 100, "tags": ["4Procesors"]}, format="json")
    job_id = r.data["id"]
    client.force_login(users["alice"])
    page = client.get(f"/jobs/{job_id}/").content.decode()
    headline = "No active computing element can take it: no active CE offers tag 4Procesors."
    assert f"<b>{headline}</b>" in page
    assert "<h3>Matching" in page and "Every computing element and the first rule" in page
    analysis = api(users["alice"]).get(f"{URL}{job_id}/analysis/").data
    assert analysis["task_queue"] is not None and analysis["matching_ces"] == 0


def test_the_directors_own_reason_heads_the_page_when_ces_could_take_the_job(submit, client, users):
    gdpconfig.set_value("PrivatePilotFraction", 0.0)  # generic pilots only
    Credential.objects.filter(group__name="lhcb_pilot").delete()
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    run_cycle("director", rng=random.Random(2))
    out = why.explain(Job.objects.get(pk=job.pk))
    assert out["headline"] == (
        "The director sends it no pilot: no credential for "
        "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=pilot as lhcb_pilot with 5 days left."
    )
    parts = {p.title: p for p in out["parts"]}
    assert not parts["Matching"].blocking  # CERN's CEs could take it: not the rule to blame
    assert parts["Pilot director"].blocking
    assert (
        parts["Pilot director"].lines[0][1] == f"/pilots/director/?task_queue={job.task_queue_id}"
    )
    client.force_login(users["alice"])
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "The director sends it no pilot: no credential for" in page


def test_a_waiting_job_the_director_has_not_seen_yet_says_so(submit):
    job = submit("alice", cpu_time=100)
    out = why.explain(job)
    assert out["headline"] == "It waits in a TaskQueue for a pilot that can take it."
    director = {p.title: p for p in out["parts"]}["Pilot director"]
    assert "has not decided on its TaskQueue yet" in director.lines[0][0]


def test_a_running_job_is_headed_by_its_state_not_asked_why_it_does_not_run(submit, client, users):
    job = put_in_state(submit("alice", cpu_time=100), JobStatus.RUNNING, "p-1")
    Job.objects.filter(pk=job.pk).update(site="LCG.CERN.ch")
    client.force_login(users["alice"])
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Why is it not running yet?" not in page
    assert "<h2>Where it runs</h2>" in page and "It is running at LCG.CERN.ch." in page
    waiting = submit("alice", cpu_time=100)
    assert (
        "<h2>Why is it not running yet?</h2>" in client.get(f"/jobs/{waiting.pk}/").content.decode()
    )
