"""The timeout rules on the database, each just before and just after its limit (the clock moves,
nothing sleeps); paused and disableReassign queues; fast rebrokerage; the heartbeat end to end."""

import random
from datetime import timedelta

import pytest
from django.db import transaction

from brokerage.models import PandaQueue, Task, TaskJob, TaskStatus
from brokerage.services.production import job_brokerage, task_brokerage
from brokerage.services.submission import submit_task
from brokerage.topology_import import import_topology
from core import clock, gdpconfig
from core.cycles import run_cycle
from core.models import CycleRun
from matcher import dispatcher
from matcher import services as job_services
from matcher.matching import Resource
from matcher.models import Job, JobStatus, TaskQueueJob, TaskQueuePriorityCount
from pilots import services as pilots
from shares.models import GridGroup
from simulation import panda_demo as demo
from timeouts.models import TimeoutAction
from timeouts.services import timeouts_cycle

HOUR = 3600
DAY = 24 * HOUR
CERN, PIC = "LCG.CERN.ch", "LCG.PIC.es"


@pytest.fixture
def panda(world):
    import_topology(demo.topology())
    # Every queue started a job just now: the 4 h rule stays out of the way unless asked for.
    PandaQueue.objects.update(last_start=clock.now())
    return world


@pytest.fixture
def make_task(panda, users):
    def make(n=1, priority=500, gshare="MC", nucleus=None):
        fields = {
            "name": "t",
            "owner_group": GridGroup.objects.get(name="lhcb_mc"),
            "priority": priority,
            "gshare": gshare,
            "n_jobs": n,
            "n_events_per_job": 10,
        }
        task = submit_task(users["erin"], fields, [])
        Task.objects.filter(pk=task.pk).update(status=TaskStatus.RUNNING)
        return task

    return make


def queue(name):
    return PandaQueue.objects.select_related("site").get(name=name)


def task_jobs(task):
    return list(
        Job.objects.filter(pk__in=TaskJob.objects.filter(task=task).values("job_id")).order_by("pk")
    )


def place(jobs, queue_name, status=JobStatus.ACTIVATED, **fields):
    """Put task jobs at a queue in a state, as brokerage, the matcher and the pilot would."""
    q = queue(queue_name)
    ids = [j.pk for j in jobs]
    with transaction.atomic():
        job_services.activate_jobs({i: [q.site.name] for i in ids}, "test brokerage")
        TaskJob.objects.filter(job_id__in=ids).update(queue=q)
        if status != JobStatus.ACTIVATED:
            for i in ids:
                job_services.leave_taskqueues([i])
            site = q.site.name if status in ("sent", "starting", "running", "holding") else ""
            if status == "transferring":
                site = q.site.name
            Job.objects.filter(pk__in=ids).update(
                status=status, site=site, status_changed=clock.now(), heartbeat=clock.now()
            )
        if fields:
            Job.objects.filter(pk__in=ids).update(**fields)
    return [Job.objects.get(pk=i) for i in ids]


def one_job(make_task, status, queue_name="CERN-PROD_MCORE", priority=500, **fields):
    [job] = place(task_jobs(make_task(priority=priority)), queue_name, status, **fields)
    return job


def last_history(job):
    return job.history.order_by("-at", "-pk").first()


def beat(job):
    pilots.heartbeat(job.pk)


# --- one test per rule, just before and just after its limit -------------------------------------

STATE_RULES = [
    # status, limit (s), priority, outcome, words in the history reason
    ("pending", HOUR, 500, "defined", "pending 1 h (TIMEOUT_pending)"),
    # Reassigned: closed, its work retried as a new job (test_task_lifecycle.py).
    ("defined", 4 * HOUR, 500, "closed", "defined 4 h (TIMEOUT_defined)"),
    ("assigned", 12 * HOUR, 500, "defined", "assigned 12 h (TIMEOUT_assigned)"),
    ("throttled", 7 * DAY, 500, "closed", "throttled 7 d (TIMEOUT_throttled)"),
    ("activated", 2 * DAY, 500, "defined", "activated or starting 2 d (TIMEOUT_activated)"),
    ("starting", 2 * DAY, 500, "defined", "activated or starting 2 d (TIMEOUT_activated)"),
    ("sent", 30 * 60, 500, "failed", "sent 30 min (TIMEOUT_sent)"),
    ("running", 21 * DAY, 500, "closed", "running 21 d (TIMEOUT_running)"),
    ("holding", 3 * HOUR, 800, "failed", "holding, high priority 3 h (TIMEOUT_holding_high_prio)"),
    ("holding", 48 * HOUR, 799, "failed", "holding 2 d (TIMEOUT_holding)"),
    ("transferring", 2 * DAY, 800, "failed", "transferring, high 2 d (transtimehi)"),
    ("transferring", 6 * DAY, 799, "failed", "transferring 6 d (transtimelo)"),
]


@pytest.mark.parametrize(("status", "limit", "priority", "outcome", "reason"), STATE_RULES)
def test_a_job_times_out_just_after_its_state_limit_and_not_before(
    make_task, status, limit, priority, outcome, reason
):
    job = one_job(make_task, status, priority=priority)
    if status in ("pending", "defined", "assigned", "throttled"):
        Job.objects.filter(pk=job.pk).update(status=status, status_changed=clock.now())
    clock.advance(limit - 60)
    beat(job)  # a live pilot: only the state's own rule can fire
    timeouts_cycle()
    job.refresh_from_db()
    assert job.status == status
    clock.advance(120)
    beat(job)
    result = timeouts_cycle()
    job.refresh_from_db()
    assert job.status == outcome, result
    entry = last_history(job)
    assert (entry.from_status, entry.to_status) == (status, outcome)
    expected_error = {"sent": (102, "timeout"), "holding": (102, "timeout")}.get(
        status, (101, "stage-out") if status == "transferring" else (None, "")
    )
    assert (job.error_code, job.error_category) == expected_error
    assert reason in entry.reason and entry.reason.startswith("timeout: ")
    assert job.status_reason == entry.reason
    action = TimeoutAction.objects.get(job=job)
    assert (action.from_status, action.to_status) == (status, outcome)


def test_a_rebrokered_task_job_leaves_its_taskqueue_and_the_counts_stay_exact(make_task):
    task = make_task(n=3)
    jobs = place(task_jobs(task), "CERN-PROD_MCORE")
    tq = jobs[0].task_queue_id
    assert TaskQueuePriorityCount.objects.get(task_queue_id=tq).jobs == 3
    Job.objects.filter(pk=jobs[0].pk).update(status_changed=clock.now() - timedelta(days=3))
    timeouts_cycle()
    j0 = Job.objects.get(pk=jobs[0].pk)
    assert j0.status == JobStatus.DEFINED and j0.site == ""
    assert not TaskQueueJob.objects.filter(job_id=j0.pk).exists()
    assert TaskQueuePriorityCount.objects.get(task_queue_id=tq).jobs == 2
    assert TaskJob.objects.get(job_id=j0.pk).queue is None
    assert Task.objects.get(pk=task.pk).status == TaskStatus.READY


def test_a_plain_dirac_job_waiting_two_days_is_rescheduled_into_its_taskqueue(panda, submit):
    job = submit("alice", cpu_time=1000, sites=[CERN])
    clock.advance(2 * DAY - 60)
    timeouts_cycle()
    assert Job.objects.get(pk=job.pk).reschedule_count == 0
    clock.advance(120)
    timeouts_cycle()
    job.refresh_from_db()
    assert job.status == JobStatus.ACTIVATED and job.reschedule_count == 1
    assert clock.now() - job.status_changed < timedelta(minutes=1)
    assert TaskQueueJob.objects.get(job_id=job.pk).task_queue_id == job.task_queue_id
    assert TaskQueuePriorityCount.objects.get(task_queue_id=job.task_queue_id).jobs == 1
    entry = last_history(job)
    assert entry.from_status == entry.to_status == "activated"
    assert "TIMEOUT_activated" in entry.reason and "rescheduled into TaskQueue" in entry.reason


def test_a_plain_job_past_max_rescheduling_fails_instead(panda, submit):
    job = submit("alice", cpu_time=1000, sites=[CERN])
    Job.objects.filter(pk=job.pk).update(reschedule_count=gdpconfig.get("MaxRescheduling"))
    clock.advance(2 * DAY + 60)
    timeouts_cycle()
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "MaxRescheduling" in job.status_reason
    assert not TaskQueueJob.objects.filter(job_id=job.pk).exists()


# --- heartbeats -------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["running", "starting"])
def test_a_job_without_heartbeat_for_2_hours_fails(make_task, status):
    job = one_job(make_task, status)
    clock.advance(2 * HOUR - 60)
    timeouts_cycle()
    assert Job.objects.get(pk=job.pk).status == status
    clock.advance(120)
    timeouts_cycle()
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "heartbeat 2 h (HEARTBEAT_TIMEOUT)" in last_history(job).reason
    assert (job.error_code, job.error_category) == (100, "lost heartbeat")


def test_a_workflow_defines_its_own_heartbeat_timeout(make_task):
    PandaQueue.objects.filter(name="PIC_MCORE").update(workflow="pull_ups")
    gdpconfig.set_value("HEARTBEAT_TIMEOUT_pull_ups", 0.5)
    at_pic = one_job(make_task, "running", "PIC_MCORE")
    at_cern = one_job(make_task, "running", "CERN-PROD_MCORE")
    clock.advance(30 * 60 - 60)
    timeouts_cycle()
    assert Job.objects.get(pk=at_pic.pk).status == "running"
    clock.advance(120)
    timeouts_cycle()
    at_pic.refresh_from_db()
    assert at_pic.status == "failed"
    assert "heartbeat 30 min (HEARTBEAT_TIMEOUT_pull_ups)" in last_history(at_pic).reason
    assert Job.objects.get(pk=at_cern.pk).status == "running"  # the default 2 h still


def test_transferring_jobs_with_an_own_stage_out_take_the_workflow_heartbeat_timeout(make_task):
    PandaQueue.objects.filter(name="PIC_MCORE").update(workflow="pull_ups")
    own = one_job(make_task, "transferring", "PIC_MCORE", sub_status="stageout")
    plain = one_job(make_task, "transferring", "PIC_MCORE")
    clock.advance(2 * HOUR + 60)
    timeouts_cycle()
    # No HEARTBEAT_TIMEOUT_pull_ups yet: transferring jobs have no heartbeat timeout.
    assert Job.objects.get(pk=own.pk).status == "transferring"
    gdpconfig.set_value("HEARTBEAT_TIMEOUT_pull_ups", 3.0)
    clock.advance(HOUR - 120)
    timeouts_cycle()
    assert Job.objects.get(pk=own.pk).status == "transferring"
    clock.advance(120)
    timeouts_cycle()
    own.refresh_from_db()
    assert own.status == "failed"
    assert "(HEARTBEAT_TIMEOUT_pull_ups)" in last_history(own).reason
    assert Job.objects.get(pk=plain.pk).status == "transferring"  # no jobSubStatus


# --- the 4 h rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "queue_change",
    [
        {"status": "offline"},
        {"status": "test"},
        {"last_start": None},
    ],
)
@pytest.mark.parametrize("status", ["activated", "starting"])
def test_high_priority_jobs_at_an_inactive_queue_are_rebrokered_after_4_hours(
    make_task, queue_change, status
):
    high = one_job(make_task, status, priority=800)
    low = one_job(make_task, status, priority=799)
    PandaQueue.objects.filter(name="CERN-PROD_MCORE").update(**queue_change)
    clock.advance(4 * HOUR - 60)
    beat(high)
    beat(low)
    timeouts_cycle()
    assert Job.objects.get(pk=high.pk).status == status
    clock.advance(120)
    beat(high)
    beat(low)
    timeouts_cycle()
    high.refresh_from_db()
    assert high.status == "defined"
    assert "high priority at an inactive queue 4 h" in last_history(high).reason
    assert Job.objects.get(pk=low.pk).status == status


def test_a_queue_whose_last_start_is_2_hours_old_is_inactive_for_the_4_hour_rule(make_task):
    job = one_job(make_task, "activated", priority=900)
    PandaQueue.objects.filter(name="CERN-PROD_MCORE").update(last_start=clock.now())
    clock.advance(4 * HOUR + 60)  # the last start is now 4 h old
    timeouts_cycle()
    assert Job.objects.get(pk=job.pk).status == "defined"


def test_a_queue_that_started_a_job_recently_is_active_for_the_4_hour_rule(make_task):
    job = one_job(make_task, "activated", priority=900)
    clock.advance(4 * HOUR + 60)
    PandaQueue.objects.filter(name="CERN-PROD_MCORE").update(last_start=clock.now())
    timeouts_cycle()
    assert Job.objects.get(pk=job.pk).status == "activated"


# --- paused queues and disableReassign -----------------------------------------------------------


@pytest.mark.parametrize(
    "queue_change", [{"status": "paused"}, {"catchall": "pilotStreaming,disableReassign"}]
)
def test_jobs_at_paused_or_disable_reassign_queues_are_never_timed_out(make_task, queue_change):
    PandaQueue.objects.filter(name="CERN-PROD_MCORE").update(**queue_change)
    jobs = [
        one_job(make_task, s)
        for s in ("activated", "sent", "starting", "running", "holding", "transferring")
    ]
    elsewhere = one_job(make_task, "running", "PIC_MCORE")
    clock.advance(30 * DAY)
    result = timeouts_cycle()
    assert [Job.objects.get(pk=j.pk).status for j in jobs] == [j.status for j in jobs]
    assert Job.objects.get(pk=elsewhere.pk).status == "failed"
    assert result["acted"] == 1


# --- fast rebrokerage ----------------------------------------------------------------------------


@pytest.fixture
def crowded(make_task):
    """Gshare MC: 12 activated jobs at CERN and 2 running there; 8 activated at PIC, 8 running.
    CERN: nq 12 > 3 × 2, 12 > 0.3 × 20, and > the threshold when it is below 12."""
    task = make_task(n=34, gshare="MC")
    jobs = task_jobs(task)
    place(jobs[:12], "CERN-PROD_MCORE")
    place(jobs[12:14], "CERN-PROD_MCORE", "running")
    place(jobs[14:22], "PIC_MCORE")
    place(jobs[22:30], "PIC_MCORE", "running")
    return task, jobs


def _rebrokered():
    return set(
        TimeoutAction.objects.filter(rule="fast_rebrokerage").values_list("job_id", flat=True)
    )


def test_fast_rebrokerage_takes_the_excess_when_all_three_thresholds_are_passed(crowded):
    task, jobs = crowded
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQUEUE_MC", 8)
    result = timeouts_cycle()
    # excess = ceil(min(12 − 3·2, 12 − 8, 12 − 0.3·20)) = 4: the four lowest ids at CERN.
    assert result["fast_rebrokerage"] == 4
    assert _rebrokered() == {j.pk for j in jobs[:4]}
    moved = Job.objects.get(pk=jobs[0].pk)
    assert moved.status == "defined"
    entry = last_history(moved)
    assert "fast rebrokerage" in entry.reason and "FAST_REBRO_THRESHOLD_NQUEUE_MC 8" in entry.reason
    assert Task.objects.get(pk=task.pk).status == TaskStatus.READY
    # The next cycle finds CERN at nq 8: 8 > 6 but not > 8.
    assert timeouts_cycle().get("fast_rebrokerage", 0) == 0


def test_fast_rebrokerage_does_not_trigger_when_the_gshare_has_no_threshold(crowded):
    result = timeouts_cycle()
    assert result.get("fast_rebrokerage", 0) == 0 and not _rebrokered()


def test_fast_rebrokerage_needs_nqueue_above_the_gshare_threshold(crowded):
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQUEUE_MC", 12)
    assert timeouts_cycle().get("fast_rebrokerage", 0) == 0
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQUEUE_MC", 11)
    assert timeouts_cycle()["fast_rebrokerage"] == 1


def test_fast_rebrokerage_needs_the_queued_to_running_ratio_above_its_threshold(crowded):
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQUEUE_MC", 0)
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQNR_RATIO", 6.0)  # 12 > 6 × 2 fails
    assert timeouts_cycle().get("fast_rebrokerage", 0) == 0
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQNR_RATIO", 5.5)  # 12 > 11: excess 1
    assert timeouts_cycle()["fast_rebrokerage"] == 1


def test_fast_rebrokerage_needs_the_queue_share_of_the_gshare_above_its_threshold(crowded):
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQUEUE_MC", 0)
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQUEUE_FRAC", 0.6)  # 12 > 0.6 × 20 fails
    assert timeouts_cycle().get("fast_rebrokerage", 0) == 0
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQUEUE_FRAC", 0.55)  # 12 > 11: excess 1
    assert timeouts_cycle()["fast_rebrokerage"] == 1


def test_fast_rebrokerage_skips_queues_with_slots_defined(crowded):
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQUEUE_MC", 0)
    PandaQueue.objects.filter(name="CERN-PROD_MCORE").update(num_slots=0)
    assert timeouts_cycle().get("fast_rebrokerage", 0) == 0


def test_fast_rebrokerage_leaves_paused_queues_alone(crowded):
    gdpconfig.set_value("FAST_REBRO_THRESHOLD_NQUEUE_MC", 0)
    PandaQueue.objects.filter(name="CERN-PROD_MCORE").update(status="paused")
    assert timeouts_cycle().get("fast_rebrokerage", 0) == 0


# --- the cycle ---------------------------------------------------------------------------------


def test_the_timeouts_cycle_is_scheduled_every_5_minutes_and_records_its_run(make_task):
    from core.schedules import SCHEDULES

    assert SCHEDULES["timeouts"] == 5
    job = one_job(make_task, "sent")
    clock.advance(31 * 60)
    run = run_cycle("timeouts")
    assert run.status == CycleRun.Status.SUCCESS and run.counts["sent"] == 1
    assert TimeoutAction.objects.get(job=job).cycle_run == run.pk


def test_a_job_the_pilot_reported_on_meanwhile_is_left_alone(make_task, monkeypatch):
    from timeouts import services as timeout_services

    job = one_job(make_task, "sent")
    clock.advance(31 * 60)
    real_apply = timeout_services.apply

    def pilot_reports_first(planned, now, run_id):
        pilots.report_job(job.pk, JobStatus.RUNNING, "started")
        return real_apply(planned, now, run_id)

    monkeypatch.setattr(timeout_services, "apply", pilot_reports_first)
    result = timeouts_cycle()
    assert result["changed_meanwhile"] == 1
    assert Job.objects.get(pk=job.pk).status == "running"
    assert not TimeoutAction.objects.exists()


# --- end to end --------------------------------------------------------------------------------


def test_a_job_whose_pilot_stops_sending_heartbeats_fails_after_2_hours(panda, submit):
    job = submit("alice", cpu_time=1000, sites=[PIC])
    found = dispatcher.match_job(
        Resource(site=PIC, grid_ce="ce07.pic.es", cpu_time=86400, setup="any"), "pilot-e2e"
    )
    assert found is not None and found.job.id == job.pk
    pilots.report_job(job.pk, JobStatus.RUNNING, "running on ce07.pic.es")
    for _ in range(6):  # an hour of heartbeats every 10 minutes, one cycle every 5
        clock.advance(300)
        run_cycle("timeouts")
        clock.advance(300)
        pilots.heartbeat(job.pk)
        run_cycle("timeouts")
    assert Job.objects.get(pk=job.pk).status == "running"
    silent_since = Job.objects.get(pk=job.pk).heartbeat
    # The pilot goes silent; a cycle every 5 minutes finds it alive up to 1 h 55 min.
    for _ in range(23):
        clock.advance(300)
        run_cycle("timeouts")
        assert Job.objects.get(pk=job.pk).status == "running", clock.now() - silent_since
    clock.advance(301)  # just past 2 hours of silence
    run_cycle("timeouts")
    job.refresh_from_db()
    assert job.status == "failed"
    entry = last_history(job)
    assert entry.from_status == "running" and "heartbeat 2 h (HEARTBEAT_TIMEOUT)" in entry.reason


def test_a_rebrokered_task_job_comes_back_through_job_brokerage(panda, users):
    from matcher.models import Site

    task = submit_task(
        users["erin"],
        {
            "name": "ttbar",
            "owner_group": GridGroup.objects.get(name="lhcb_mc"),
            "core_count": 8,
            "n_jobs": 2,
            "n_events_per_job": 100,
        },
        [],
    )
    task_brokerage(rng=random.Random(3))
    assert job_brokerage(rng=random.Random(3))["jobs"] == 2
    [job, other] = task_jobs(task)
    site = job.sites[0]
    found = dispatcher.match_job(
        Resource(site=site, grid_ce="any", cpu_time=86400, setup="LHCb-Production"), "p-1"
    )
    assert found is not None
    matched = Job.objects.get(pk=found.job.id)
    assert matched.status == "sent" and Site.objects.filter(name=matched.site).exists()
    clock.advance(31 * 60)
    timeouts_cycle()
    matched.refresh_from_db()
    assert matched.status == "failed"  # sent 30 min: the pilot never answered
    # The other job stalls in activated for two days: re-brokered, then placed again.
    clock.advance(2 * DAY)
    PandaQueue.objects.update(last_start=clock.now(), last_pilot=clock.now())
    timeouts_cycle()
    waiting = Job.objects.get(pk=other.pk if matched.pk == job.pk else job.pk)
    assert waiting.status == "defined" and waiting.site == ""
    assert Task.objects.get(pk=task.pk).status == TaskStatus.READY
    result = job_brokerage(rng=random.Random(4))
    assert result["jobs"] == 1
    waiting.refresh_from_db()
    assert waiting.status == "activated"
    assert TaskJob.objects.get(job_id=waiting.pk).queue is not None
    steps = [(h.from_status, h.to_status) for h in waiting.history.order_by("at", "pk")]
    assert steps[-2:] == [("activated", "defined"), ("defined", "activated")]
    assert "brokered by job brokerage" in waiting.history.order_by("-at", "-pk")[0].reason
