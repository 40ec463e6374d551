"""Each kind of finished work is kept for its own age, and live work is never touched."""

from __future__ import annotations

import pytest

from core import clock
from retention.services import run_retention


def _exists(model, ids) -> set[int]:
    return set(model.objects.filter(pk__in=ids).values_list("pk", flat=True))


def test_finished_jobs_older_than_their_age_go_with_their_history_and_younger_ones_stay(
    killed, age, ages
):
    from matcher.models import Job, JobStatusHistory

    ages(jobs=7)
    old = killed(3)
    age(4)
    young = killed(2)
    age(4)  # the first three finished 8 days ago, the other two 4 days ago

    tally = run_retention()

    assert _exists(Job, old + young) == set(young)
    assert not JobStatusHistory.objects.filter(job_id__in=old).exists()
    assert JobStatusHistory.objects.filter(job_id__in=young).count() == 2 * len(young)
    assert tally.deleted["jobs"] == 3


def test_waiting_and_running_jobs_are_never_deleted_however_old(submit, killed, age, ages):
    from matcher.models import Job, JobStatus
    from pilots.services import report_job

    ages(jobs=1)
    waiting = submit("alice")
    running = submit("bob")
    Job.objects.filter(pk=running.pk).update(status=JobStatus.SENT)
    report_job(running.pk, JobStatus.RUNNING, "started")
    final = killed(1)
    age(400)

    run_retention()

    assert _exists(Job, [waiting.pk, running.pk, *final]) == {waiting.pk, running.pk}
    assert Job.objects.get(pk=waiting.pk).status == JobStatus.ACTIVATED


def test_finished_jobs_of_a_live_task_stay_until_the_task_is_done(users, age, ages, api):
    from brokerage.models import Task, TaskJob, TaskStatus
    from brokerage.topology_import import import_topology
    from matcher import services
    from matcher.models import Job
    from simulation import panda_demo as demo

    import_topology(demo.topology())
    body = {"name": "evgen", "owner_group": "lhcb_mc", "n_jobs": 3, "processing_type": "evgen"}
    r = api(users["erin"]).post("/api/v1/tasks/", body, format="json")
    assert r.status_code == 201, r.content
    task = Task.objects.get(pk=r.data["id"])
    job_ids = list(TaskJob.objects.filter(task=task).values_list("job_id", flat=True))
    for job_id in job_ids:
        services.kill_job(job_id, users["admin"], "task aborted")
    ages(jobs=7)
    age(30)

    run_retention()
    assert _exists(Job, job_ids) == set(job_ids), "a live task's jobs were deleted"

    Task.objects.filter(pk=task.pk).update(status=TaskStatus.DONE)
    run_retention()
    assert not _exists(Job, job_ids)
    assert not TaskJob.objects.filter(task=task).exists()
    assert Task.objects.filter(pk=task.pk).exists(), "the task itself is not a job"


def test_finished_nodes_of_a_live_job_ad_stay_and_go_once_the_ad_completed(
    users, killed, age, ages
):
    from classads.models import JobAd, JobAdNode, JobAdStatus
    from matcher.models import Job

    [node_job] = killed(1, "dave")
    ad = JobAd.objects.create(
        owner=users["dave"],
        owner_group=users["dave"].grid_groups.first(),
        setup="LHCb-Production",
        text="[Requirements = true]",
        digest="d",
        status=JobAdStatus.MATCHED,
        matched=clock.now(),
        created=clock.now(),
    )
    JobAdNode.objects.create(job_ad=ad, job_id=node_job, name="A")
    ages(jobs=7, job_ads=30)
    age(10)

    run_retention()
    assert _exists(Job, [node_job]) == {node_job}

    JobAd.objects.filter(pk=ad.pk).update(status=JobAdStatus.COMPLETED)
    run_retention()
    assert not _exists(Job, [node_job])
    assert JobAd.objects.filter(pk=ad.pk).exists(), "the ad has its own, longer age"
    age(25)
    run_retention()
    assert not JobAd.objects.filter(pk=ad.pk).exists()


def _logs_at(now, task, tq_id: int) -> dict[str, int]:
    """One row of every log kind at `now`; returns their ids by kind."""
    from brokerage.models import BrokerageRun
    from core.models import CycleRun
    from pilots.models import DirectorDecision
    from timeouts.models import TimeoutAction

    run = CycleRun.objects.create(kind="director", started=now, finished=now, status="success")
    decision = DirectorDecision.objects.create(
        cycle_run=run.pk,
        at=now,
        task_queue_id=tq_id,
        priority=1.0,
        jobs=1,
        cpu_time=3600,
        lam=0.5,
        drawn=1,
        cap=1,
        waiting_pilots=0,
        submitted=1,
    )
    brokerage = BrokerageRun.objects.create(task=task, kind="job", at=now, outcome="assigned")
    action = TimeoutAction.objects.create(
        at=now, rule="sent", job_id=1, from_status="sent", to_status="activated"
    )
    return {
        "cycle_runs": run.pk,
        "director_decisions": decision.pk,
        "brokerage_runs": brokerage.pk,
        "timeout_actions": action.pk,
    }


def _pilot(reference: str, to: str | None):
    from pilots.models import Pilot
    from pilots.services import set_pilot_status

    now = clock.now()
    pilot = Pilot.objects.create(
        reference=reference,
        task_queue_id=1,
        owner_dn="/DC=ch/CN=pilot",
        owner_group="lhcb_pilot",
        submit_pool="Test",
        status="Submitted",
        submitted=now,
        status_changed=now,
    )
    if to:
        set_pilot_status(pilot.pk, to, "test")
    return pilot.pk


@pytest.fixture
def task(users):
    from brokerage.models import Task

    return Task.objects.create(
        name="t",
        owner=users["erin"],
        owner_group=users["erin"].grid_groups.first(),
        status="running",
        created=clock.now(),
        modified=clock.now(),
    )


def test_each_kind_of_log_is_kept_for_its_own_age(task, age, ages):
    from brokerage.models import BrokerageRun
    from core.models import CycleRun
    from pilots.models import DirectorDecision, Pilot, PilotStatusHistory
    from timeouts.models import TimeoutAction

    models = {
        "cycle_runs": CycleRun,
        "director_decisions": DirectorDecision,
        "brokerage_runs": BrokerageRun,
        "timeout_actions": TimeoutAction,
    }
    ages(cycle_runs=2, director_decisions=4, brokerage_runs=6, timeout_actions=8, pilots=10)
    rows = [_logs_at(clock.now(), task, 1)]
    done, live = _pilot("p-done", "Done"), _pilot("p-live", "Running")
    for _ in range(12):  # a newer row of each kind every day
        age(1)
        rows.append(_logs_at(clock.now(), task, 1))

    run_retention()

    # Row i was written 12 - i days ago: a kind of age A keeps the rows younger than A days.
    for kind, model in models.items():
        days = {"cycle_runs": 2, "director_decisions": 4, "brokerage_runs": 6}.get(kind, 8)
        kept = {r[kind] for i, r in enumerate(rows) if 12 - i < days}
        assert _exists(model, [r[kind] for r in rows]) == kept, kind
    # The pilot done 12 days ago goes with its history; a live one stays however old.
    assert _exists(Pilot, [done, live]) == {live}
    assert not PilotStatusHistory.objects.filter(pilot_id=done).exists()
    assert PilotStatusHistory.objects.filter(pilot_id=live).exists()


def test_an_age_of_0_keeps_that_kind_forever(killed, age, ages):
    from matcher.models import Job

    ages(jobs=0)
    ids = killed(2)
    age(3650)
    run_retention()
    assert _exists(Job, ids) == set(ids)


def test_the_last_successful_run_of_each_cycle_and_the_latest_decision_per_task_stay(task, age):
    from brokerage.models import BrokerageRun
    from core.models import CycleRun

    now = clock.now()
    older = CycleRun.objects.create(kind="negotiator", started=now, finished=now, status="success")
    age(1)
    now = clock.now()
    success = CycleRun.objects.create(
        kind="negotiator", started=now, finished=now, status="success"
    )
    failed_after = CycleRun.objects.create(
        kind="negotiator", started=now, finished=now, status="failed"
    )
    decisions = [
        BrokerageRun.objects.create(task=task, kind=kind, at=now, outcome="pending")
        for kind in ("task", "job", "job")
    ]
    age(400)

    run_retention()

    assert not CycleRun.objects.filter(pk=older.pk).exists()
    assert CycleRun.objects.filter(pk=success.pk).exists()
    assert CycleRun.objects.filter(pk=failed_after.pk).exists(), "no success came after it"
    assert _exists(BrokerageRun, [d.pk for d in decisions]) == {decisions[0].pk, decisions[2].pk}
