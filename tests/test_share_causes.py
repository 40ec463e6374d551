"""Why a small group is off its share reaches GET /api/v1/shares/ and the Shares page from the
apps that hold the causes (web.shares.why_sources): the director's decisions for its TaskQueues,
its jobs held in brokerage, its correction at the corrector's clamp, a recent JobShare change."""

from datetime import timedelta

import pytest

from core import clock, gdpconfig
from core.cycles import run_cycle
from matcher.models import JobStatus
from matcher.tests.test_job_actions import put_in_state
from pilots.models import DirectorDecision
from shares.models import CorrectionRecord, GridGroup
from shares.services import change_group

FULL = "CEs took 0 of 3 (no free waiting slots, or no more waiting jobs than pilots there)"


def _decide(
    tq_id: int, skipped: str, drawn: int = 3, submitted: int = 0, run: int = 1, lam: float = 0.4
) -> None:
    DirectorDecision.objects.create(
        cycle_run=run,
        at=clock.now() - timedelta(minutes=10),
        task_queue_id=tq_id,
        priority=1.0,
        jobs=5,
        cpu_time=500,
        lam=lam,
        drawn=drawn,
        cap=5,
        waiting_pilots=0,
        submitted=submitted,
        skipped=skipped,
    )


@pytest.fixture
def starved(submit, django_capture_on_commit_callbacks):
    """alice (lhcb_user) runs two jobs and waits with one; erin (lhcb_mc, the small group) waits
    with five jobs a CE can serve and runs none."""
    with django_capture_on_commit_callbacks(execute=True):
        alice = [submit("alice", cpu_time=100) for _ in range(3)]
        erin = [submit("erin", cpu_time=100) for _ in range(5)]
    for job in alice[:2]:
        put_in_state(job, JobStatus.RUNNING, "p")
    run_cycle("usage_sampling")
    return {"alice": alice, "erin": erin}


def _group(api, users, name: str) -> dict:
    data = api(users["admin"]).get("/api/v1/shares/").data
    return next(g for g in data["groups"] if g["group"] == name)


def test_a_small_group_whose_pilots_the_ces_had_no_waiting_slots_for_is_told_so(
    starved, api, users
):
    user_share = GridGroup.objects.get(name="lhcb_user").job_share
    GridGroup.objects.filter(name="lhcb_mc").update(job_share=user_share * 0.006)
    tq = starved["erin"][0].task_queue_id
    for run in (1, 2):
        _decide(tq, FULL, run=run)  # λ 0.4 each
    # alice's TaskQueue: its pilots went, λ 59.2.
    _decide(starved["alice"][2].task_queue_id, "", drawn=5, submitted=5, lam=59.2)
    mc = _group(api, users, "lhcb_mc")
    # 0.6 % expected, nothing running: within 2 points, and still told why.
    assert round(mc["expected"], 4) == 0.006 and mc["running"] == 0
    assert mc["reason"] == {
        "code": "ces_full",
        "text": "the CEs had no free waiting slots for its pilots: the director drew 6 for its "
        "TaskQueues in the last hour and the CEs took 0 (in 2 of its 2 decisions), 0 % of all "
        "the pilots sent, against its 0.6 % share; the λ of its TaskQueues (their priority, "
        "weighted up for CPU segments shorter than maxCPU down to lowestCPUBoost) was 1.3 % of "
        "the director's: a cycle shares a CE's scarce waiting slots by the TaskQueues' λ",
    }


def test_an_external_submit_pool_that_sent_nothing_is_named(starved, api, users):
    tq = starved["erin"][0].task_queue_id
    _decide(tq, "pool DIRAC: its pilots are started outside this director")
    reason = _group(api, users, "lhcb_mc")["reason"]
    assert reason["code"] == "director_blocked"
    assert reason["text"].startswith(
        "the director sends its TaskQueues no pilots: pool DIRAC: its pilots are started "
        "outside this director (1 of the 1 director decisions"
    )


def test_jobs_held_in_brokerage_are_named_when_its_servable_work_cannot_fill_its_share(
    submit, starved, api, users, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        dave = [submit("dave", cpu_time=100) for _ in range(5)]
    for job in dave[1:]:
        put_in_state(job, JobStatus.THROTTLED)
    data = _group(api, users, "lhcb_data")
    assert (data["waiting_jobs"], data["running"]) == (1, 0)
    assert data["reason"]["code"] == "held"
    assert data["reason"]["text"].startswith(
        "4 of its jobs are held in brokerage, not yet in a TaskQueue (throttled 4): only 1 "
        "waiting jobs that a CE can serve and 0 running"
    )


def test_a_correction_at_the_clamp_names_the_bound_and_its_parameter(starved, api, users):
    gdpconfig.set_value("EnableSharesCorrection", True)
    mc = GridGroup.objects.get(name="lhcb_mc")
    CorrectionRecord.objects.create(
        at=clock.now(),
        instance="GroupsInstance",
        group=mc,
        slices={"WeekSlice": 2.0, "HourSlice": 5.0},
        factor=2.6,
    )
    got = _group(api, users, "lhcb_mc")
    assert got["correction_clamp"] == "upper"
    assert got["reason"]["text"].endswith(
        "its correction ×2.60 is at the corrector's upper clamp (MaxCorrection of every slice "
        "of GroupsInstance: HourSlice 5, WeekSlice 2): the corrector cannot raise its priority "
        "further"
    )


def test_a_jobshare_raised_within_the_hour_is_the_reason_of_a_group_still_below(
    starved, api, users
):
    mc = GridGroup.objects.get(name="lhcb_mc")
    old = mc.job_share
    change_group(mc, {"job_share": old * 3}, users["admin"])
    reason = _group(api, users, "lhcb_mc")["reason"]
    assert reason["code"] == "share_change"
    assert reason["text"].startswith(
        f"its JobShare changed from {old:g} to {old * 3:g} 0 min ago: the achieved share "
        "(the last hour's average) and the correction still count the running jobs before it"
    )


def test_the_pilots_that_ran_an_entitys_jobs_are_told_apart_by_whom_they_were_sent_for(starved):
    from matcher.models import Job
    from pilots.models import Pilot, PilotStatus
    from web.shares import why_sources

    alice = starved["alice"]
    at = clock.now() - timedelta(minutes=10)

    def pilot(tq_id: int) -> Pilot:
        return Pilot.objects.create(
            reference=f"p-{Pilot.objects.count()}",
            task_queue_id=tq_id,
            owner_dn="/CN=pilot",
            owner_group="lhcb_pilot",
            submit_pool="Simulated",
            status=PilotStatus.RUNNING,
            submitted=at,
            status_changed=at,
        )

    # alice's first running job on a pilot sent for erin's TaskQueue (lhcb_mc), her second on
    # one sent for her own.
    Job.objects.filter(pk=alice[0].pk).update(pilot=pilot(starved["erin"][0].task_queue_id))
    Job.objects.filter(pk=alice[1].pk).update(pilot=pilot(alice[2].task_queue_id))
    got = why_sources.ran_by(clock.now() - timedelta(hours=1))
    group, user = alice[0].owner_group_id, alice[0].owner_id
    assert got[(group, None)] == (2, 1)
    assert got[(group, user)] == (2, 1)
