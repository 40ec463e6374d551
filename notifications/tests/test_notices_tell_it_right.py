"""What a notice says and when: links to where the site serves, each ending of a rescheduled
job, a task's outcome as its state says, no channel without an address, defaults that do not
flood."""

import os
import subprocess
import sys

import pytest
from django.core import mail
from django.test import override_settings

from brokerage.lifecycle import task_completion
from brokerage.models import Task, TaskJob, TaskStatus
from gridwms import settings as project_settings
from matcher import services as job_services
from matcher.dispatcher import match_job
from matcher.matching import Resource
from matcher.models import Job, JobStatus
from notifications.discovery import Ended
from notifications.models import Kind, Notice, NotificationPreference, NotificationRequest

URL = "/api/v1/notifications/"
PREFS = "/api/v1/notifications/preferences/"


def _without_address(user):
    user.email = ""
    user.save(update_fields=["email"])
    return user


# --- links -------------------------------------------------------------------------------------


def _site_url(**env) -> str:
    """settings.SITE_URL as a process started with `env` reads it."""
    clean = {k: v for k, v in os.environ.items() if k not in ("SITE_URL", "HOST", "PORT")}
    clean.pop("WEB_BIND", None)
    out = subprocess.run(
        [sys.executable, "-c", "from gridwms import settings; print(settings.SITE_URL)"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_the_site_url_is_where_the_server_serves_unless_set():
    assert _site_url(PORT="8123") == "http://127.0.0.1:8123"
    assert _site_url(HOST="10.1.2.3", PORT="9000") == "http://10.1.2.3:9000"
    assert _site_url(WEB_BIND="[::1]:8443") == "http://[::1]:8443"
    assert _site_url(PORT="8123", SITE_URL="https://grid.example.org/") == (
        "https://grid.example.org"
    )


def test_a_wildcard_address_reads_as_the_hosts_own_name(monkeypatch):
    monkeypatch.delenv("WEB_BIND", raising=False)
    monkeypatch.setenv("HOST", "0.0.0.0")
    monkeypatch.setenv("PORT", "8080")
    monkeypatch.setattr(project_settings.socket, "getfqdn", lambda: "wms.example.org")
    assert project_settings.served_url() == "http://wms.example.org:8080"


@override_settings(SITE_URL="http://127.0.0.1:8123")
def test_a_webhooks_link_points_at_the_port_the_server_runs_on(
    users, submit, api, end, run, webhook
):
    job = submit("alice")
    body = {"job": job.pk, "channels": ["webhook", "email"], "webhook_url": webhook.url}
    assert api(users["alice"]).post(URL, body, format="json").status_code == 201
    end(job)

    run()

    [posted] = webhook.bodies
    assert posted["json"]["link"] == f"http://127.0.0.1:8123/jobs/{job.pk}/"
    [message] = mail.outbox
    assert f"http://127.0.0.1:8123/jobs/{job.pk}/" in message.body


# --- a job that ends again -------------------------------------------------------------------


def _reschedule(api, user, job):
    r = api(user).post(f"/api/v1/jobs/{job.pk}/reschedule/")
    assert r.status_code in (200, 202), r.content


def test_a_rescheduled_job_that_fails_again_is_told_each_time(users, submit, api, end, run):
    alice = users["alice"]
    job = submit("alice")
    assert api(alice).post(URL, {"job": job.pk}, format="json").status_code == 201
    end(job, JobStatus.FAILED, "exit code 3")
    run()
    _reschedule(api, alice, job)
    run()  # waiting again: nothing new to tell
    assert len(mail.outbox) == 1
    end(job, JobStatus.FAILED, "exit code 4")

    run()
    run()  # told once per ending, never twice

    assert [("exit code 3" in m.body, "exit code 4" in m.body) for m in mail.outbox] == [
        (True, False),
        (False, True),
    ]
    notices = Notice.objects.filter(object_id=job.pk).order_by("id")
    assert [n.state for n in notices] == ["sent", "sent"]
    assert notices[0].episode < notices[1].episode


def test_a_default_for_jobs_tells_the_retrys_outcome_too(users, submit, api, end, run):
    alice = users["alice"]
    r = api(alice).patch(PREFS, {"email": True, "scope": "jobs"}, format="json")
    assert r.status_code == 200, r.data
    job = end(submit("alice"), JobStatus.FAILED, "exit code 3")
    run()
    _reschedule(api, alice, job)
    end(job)

    run()

    assert [m.subject for m in mail.outbox] == [
        f"[gridwms] Job {job.pk} failed",
        f"[gridwms] Job {job.pk} finished",
    ]


# --- a task's outcome ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "outcome"),
    [
        (TaskStatus.DONE, "finished"),
        (TaskStatus.FINISHED, "finished"),
        (TaskStatus.FAILED, "failed"),
    ],
)
def test_a_tasks_outcome_agrees_with_its_final_state(state, outcome):
    assert Ended(Kind.TASK, 1, 1, "t", state, "").outcome == outcome


def test_a_task_some_of_whose_jobs_failed_is_told_finished_with_its_state_explained(
    users, api, run, panda
):
    erin = users["erin"]
    body = {"name": "evgen", "owner_group": "lhcb_mc", "n_jobs": 2, "processing_type": "evgen"}
    r = api(erin).post("/api/v1/tasks/", body, format="json")
    assert r.status_code == 201, r.content
    task = Task.objects.get(pk=r.data["id"])
    assert api(erin).post(URL, {"task": task.pk}, format="json").status_code == 201
    first, second = TaskJob.objects.filter(task=task).order_by("job_id")
    job_services.activate_jobs({first.job_id: ["LCG.CERN.ch"]}, "placed")
    taken = match_job(Resource(site="LCG.CERN.ch", setup="any", cpu_time=10**6), "p-t")
    assert taken is not None and taken.job.id == first.job_id
    job_services.report_job(first.job_id, JobStatus.RUNNING, "started")
    job_services.report_job(first.job_id, JobStatus.FINISHED, "exit code 0")
    job_services.kill_job(second.job_id, users["admin"], "not needed")
    task_completion()
    task.refresh_from_db()
    assert task.status == TaskStatus.FINISHED

    run()

    notice = Notice.objects.get(kind="task", object_id=task.pk)
    assert (notice.outcome, notice.final_state) == ("finished", "finished")
    [message] = mail.outbox
    assert "has finished (state: finished (some jobs did not))" in message.body


# --- channels without an address ---------------------------------------------------------------


def test_asking_by_email_without_an_address_answers_400_naming_channels(users, submit, api):
    alice = _without_address(users["alice"])
    job = submit("alice")
    for body in ({"job": job.pk}, {"job": job.pk, "channels": ["email", "webhook"]}):
        r = api(alice).post(URL, body, format="json")
        assert r.status_code == 400 and "channels" in r.data, r.data
        assert "no e-mail address" in str(r.data["channels"])
    assert not NotificationRequest.objects.exists()


def test_an_email_default_without_an_address_answers_400_naming_email(users, api):
    alice = _without_address(users["alice"])
    r = api(alice).patch(PREFS, {"email": True}, format="json")
    assert r.status_code == 400 and "email" in r.data, r.data
    assert not NotificationPreference.objects.exists()


def test_the_page_refuses_email_without_an_address_with_a_form_error(users, submit, client):
    alice = _without_address(users["alice"])
    client.force_login(alice)
    r = client.post(
        "/notifications/",
        {"action": "preference", "pref-email": "on", "pref-outcomes": "both",
         "pref-scope": "tasks"},
    )  # fmt: skip
    assert r.status_code == 400
    assert "your account has no e-mail address" in r.content.decode()
    job = submit("alice")
    r = client.post(
        "/notifications/",
        {"action": "request", "req-kind": "job", "req-object_id": job.pk,
         "req-channels": ["email"], "req-outcomes": "both"},
    )  # fmt: skip
    assert r.status_code == 400
    assert "your account has no e-mail address" in r.content.decode()
    assert not NotificationPreference.objects.exists()
    assert not NotificationRequest.objects.exists()


# --- defaults that do not flood ----------------------------------------------------------------


def test_a_default_by_itself_tells_ones_tasks_not_each_job_of_a_bulk_submission(
    users, api, run, webhook
):
    alice = users["alice"]
    r = api(alice).patch(PREFS, {"webhook_url": webhook.url}, format="json")
    assert (r.status_code, r.data["scope"]) == (200, "tasks")
    group = alice.grid_groups.first().name
    bulk = [{"owner_group": group, "cpu_time": 1000, "name": f"b{i}"} for i in range(5)]
    r = api(alice).post("/api/v1/jobs/", bulk, format="json")
    assert r.status_code == 201, r.content
    jobs = list(Job.objects.filter(pk__in=[j["id"] for j in r.data]).order_by("pk"))
    for i in range(len(jobs)):  # pilots take them in their TaskQueue's order
        taken = match_job(Resource(site="LCG.CERN.ch", setup="any", cpu_time=10**6), f"p{i}")
        job_services.report_job(taken.job.id, JobStatus.RUNNING, "started")
        job_services.report_job(taken.job.id, JobStatus.FINISHED, "exit code 0")

    run()
    assert webhook.bodies == []

    # one of them asked about: that one is told
    assert api(alice).post(URL, {"job": jobs[0].pk}, format="json").status_code == 201
    run()
    assert webhook.bodies == [] and [m.subject for m in mail.outbox] == [
        f"[gridwms] Job {jobs[0].pk} (b0) finished"
    ]


def test_the_demo_users_have_an_address_so_their_email_default_is_accepted(users, api):
    for name in ("alice", "bob", "carol", "dave", "erin", "admin"):
        assert users[name].email == f"{name}@example.org"
    r = api(users["bob"]).patch(PREFS, {"email": True}, format="json")
    assert (r.status_code, r.data["scope"]) == (200, "tasks")
