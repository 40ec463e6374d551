"""The notifications cycle: what ends is told once, to whom asked, on the channels asked."""

import pytest
from django.core import mail

from core import gdpconfig
from matcher import services as job_services
from matcher.models import JobStatus
from notifications import services
from notifications.models import Notice, NotificationRequest


def ask(user, **fields):
    fields.setdefault("channels", ["email"])
    return services.create_request(user, fields)


def test_a_finished_job_with_a_request_sends_one_mail_with_its_outcome_and_link(
    with_email, submit, end, run
):
    alice = with_email["alice"]
    job = submit("alice", name="hello")
    ask(alice, job_id=job.pk)
    end(job)

    run()
    run()  # the second run finds it already told

    assert len(mail.outbox) == 1
    [message] = mail.outbox
    assert message.to == ["alice@example.org"]
    assert "finished" in message.subject and str(job.pk) in message.subject
    assert f"http://127.0.0.1:8000/jobs/{job.pk}/" in message.body
    assert "exit code 0" in message.body
    assert NotificationRequest.objects.get(job_id=job.pk).done
    assert Notice.objects.get(object_id=job.pk).state == Notice.State.SENT


def test_a_job_still_running_is_not_told_until_it_ends(with_email, submit, end, run):
    job = submit("alice")
    ask(with_email["alice"], job_id=job.pk, outcomes="failed")
    run()
    assert mail.outbox == []
    end(job, JobStatus.FAILED, "exit code 3")
    run()
    assert len(mail.outbox) == 1
    assert "failed" in mail.outbox[0].subject and "exit code 3" in mail.outbox[0].body


def test_a_request_for_failures_only_is_not_told_of_a_finished_job(with_email, submit, end, run):
    job = submit("alice")
    ask(with_email["alice"], job_id=job.pk, outcomes="failed")
    end(job)
    run()
    assert mail.outbox == []
    assert NotificationRequest.objects.get(job_id=job.pk).done


def test_a_default_for_jobs_applies_to_every_job_of_the_user(with_email, submit, end, run):
    services.save_preference(
        with_email["alice"], {"scope": "jobs", "email": True, "outcomes": "both"}
    )
    first = end(submit("alice"))
    second = end(submit("alice"), JobStatus.FAILED, "exit code 1")
    killed = job_services.kill_job(submit("alice").pk, with_email["alice"], "not needed")
    end(submit("bob"))  # bob has no default

    run()
    run()

    told = {m.subject: m for m in mail.outbox}
    assert len(mail.outbox) == 3, list(told)
    assert all(m.to == ["alice@example.org"] for m in mail.outbox)
    subjects = " | ".join(told)
    assert f"Job {first.pk}" in subjects and f"Job {second.pk}" in subjects
    assert f"Job {killed.pk}" in subjects  # cancelled: an outcome of "failed"


def test_work_that_ended_before_the_default_was_set_is_not_told(with_email, submit, end, run):
    end(submit("alice"))
    services.save_preference(with_email["alice"], {"scope": "jobs", "email": True})
    run()
    assert mail.outbox == []
    end(submit("alice"))
    run()
    assert len(mail.outbox) == 1


def test_the_cycle_reads_only_the_history_since_its_last_run(with_email, submit, end, run):
    from matcher.models import JobStatusHistory
    from notifications.models import ScanCursor

    services.save_preference(with_email["alice"], {"scope": "jobs", "email": True})
    end(submit("alice"))
    run()
    top = JobStatusHistory.objects.order_by("-id").first().pk
    assert ScanCursor.objects.get().position == top


def test_a_webhook_gets_the_json_of_the_job_that_ended(with_email, submit, end, run, webhook):
    services.save_preference(with_email["alice"], {"scope": "jobs", "webhook_url": webhook.url})
    job = end(submit("alice", name="wh"), JobStatus.FAILED, "exit code 3")

    run()
    run()

    assert mail.outbox == []  # e-mail is off
    assert len(webhook.bodies) == 1
    [posted] = webhook.bodies
    assert posted["content_type"] == "application/json"
    assert posted["json"] == {
        "kind": "job",
        "id": job.pk,
        "job_id": job.pk,
        "name": "wh",
        "outcome": "failed",
        "state": "failed",
        "reason": "exit code 3",
        "link": f"http://127.0.0.1:8000/jobs/{job.pk}/",
    }


def test_a_failing_webhook_is_retried_then_given_up_and_shown(
    with_email, submit, end, run, webhook, client
):
    gdpconfig.set_value("NotificationMaxAttempts", 3)
    gdpconfig.set_value("NotificationRetrySeconds", 0)
    webhook.status = 500
    alice = with_email["alice"]
    job = submit("alice")
    ask(alice, job_id=job.pk, channels=["webhook"], webhook_url=webhook.url)
    end(job)

    run()
    notice = Notice.objects.get(object_id=job.pk)
    assert (notice.state, notice.attempts, notice.error) == (
        "failed",
        1,
        "delivery failed (HTTP 500)",
    )
    run()
    run()
    run()  # nothing left to try

    notice.refresh_from_db()
    assert len(webhook.bodies) == 3
    assert (notice.state, notice.attempts) == ("given_up", 3)
    client.force_login(alice)
    page = client.get("/notifications/").content.decode()
    assert "given up" in page and "HTTP 500" in page


def test_a_webhook_that_recovers_is_sent_once(with_email, submit, end, run, webhook):
    gdpconfig.set_value("NotificationRetrySeconds", 0)
    webhook.status = 503
    services.save_preference(with_email["alice"], {"scope": "jobs", "webhook_url": webhook.url})
    end(submit("alice"))
    run()
    webhook.status = 200
    run()
    run()
    assert len(webhook.bodies) == 2
    assert Notice.objects.get().state == Notice.State.SENT


def test_an_address_removed_after_asking_gets_the_notice_given_up_and_shown(
    with_email, submit, end, run
):
    job = submit("alice")
    ask(with_email["alice"], job_id=job.pk)
    with_email["alice"].email = ""
    with_email["alice"].save(update_fields=["email"])
    end(job)
    run()
    notice = Notice.objects.get()
    assert (notice.state, notice.error) == ("given_up", "no e-mail address")


@pytest.fixture
def erin_task(with_email, api):
    from brokerage.models import Task
    from brokerage.topology_import import import_topology
    from simulation import panda_demo as demo

    import_topology(demo.topology())
    body = {"name": "evgen", "owner_group": "lhcb_mc", "n_jobs": 3, "processing_type": "evgen"}
    r = api(with_email["erin"]).post("/api/v1/tasks/", body, format="json")
    assert r.status_code == 201, r.content
    return Task.objects.get(pk=r.data["id"])


def _kill_task_jobs(task, admin):
    from brokerage.lifecycle import task_completion
    from brokerage.models import TaskJob

    for job_id in TaskJob.objects.filter(task=task).values_list("job_id", flat=True):
        job_services.kill_job(job_id, admin, "task aborted")
    task_completion()


def test_a_task_that_ends_is_told_once_to_who_asked(with_email, erin_task, run):
    ask(with_email["erin"], task_id=erin_task.pk)
    run()
    assert mail.outbox == []
    _kill_task_jobs(erin_task, with_email["admin"])

    run()
    run()

    assert len(mail.outbox) == 1
    [message] = mail.outbox
    assert message.to == ["erin@example.org"]
    assert f"Task {erin_task.pk}" in message.subject and "failed" in message.subject
    assert f"http://127.0.0.1:8000/brokerage/tasks/{erin_task.pk}/" in message.body


def test_the_default_tells_a_task_once_not_each_of_its_jobs(with_email, erin_task, run):
    services.save_preference(with_email["erin"], {"email": True})
    _kill_task_jobs(erin_task, with_email["admin"])
    run()
    run()
    assert [m.subject for m in mail.outbox] == [f"[gridwms] Task {erin_task.pk} (evgen) failed"]
