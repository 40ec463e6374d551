"""The priorities cycle keeps its inputs between runs and recomputes only what changed: after
any mix of changes made through the services (jobs submitted into new and existing
TaskQueues, jobs killed and their TaskQueues dropped, JobShares edited, usage that moves the
correction factors) the priorities it leaves stored are exactly those a full recompute
computes, and a run after no change writes nothing."""

from __future__ import annotations

import random

import pytest

from core import clock, gdpconfig
from matcher import taskqueue_priorities as tp
from matcher.models import Job, JobStatus, TaskQueue, TaskQueueChange
from matcher.services import groups as group_services
from matcher.services.jobs import kill_job
from shares import priorities as engine
from shares import services as share_services
from shares.models import GridGroup

USERS = ["alice", "bob", "erin", "dave"]


def full_recompute() -> dict[int, float]:
    """What a full recompute stores, from the factors of the cycle's last corrector run."""
    loads = tp.taskqueue_loads()
    result = engine.taskqueue_priorities(
        loads,
        tp.groups_map(),
        share_services.latest_corrections(),
        gdpconfig.get("PRIORITY_CONSOLIDATION"),
    )
    return {tq.id: result.get(tq.id, engine.MIN_PRIORITY) for tq in loads}


def stored() -> dict[int, float]:
    return dict(TaskQueue.objects.values_list("id", "priority"))


def logged_priorities() -> int:
    return TaskQueueChange.objects.filter(kind=TaskQueueChange.Kind.PRIORITY).count()


@pytest.fixture
def fresh_state():
    tp._state.reset()  # as a process starting: the first run computes everything
    yield tp._state
    tp._state.reset()


@pytest.fixture
def waiting(submit, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return [
            submit(u, cpu_time=c, user_priority=p)
            for u in USERS
            for c, p in ((100, 1), (5000, 3), (100000, 2))
        ]


def test_a_run_after_no_change_recomputes_and_writes_nothing(waiting, fresh_state):
    first = tp.priorities_cycle()
    assert first["recomputed"] == first["taskqueues"] == TaskQueue.objects.count()
    assert stored() == full_recompute()
    before = logged_priorities()
    again = tp.priorities_cycle()
    assert (again["recomputed"], again["written"]) == (0, 0)
    assert logged_priorities() == before  # no UPDATE, nothing for the matchers to reload


def test_a_users_new_job_recomputes_only_that_users_taskqueues(waiting, fresh_state, submit, users):
    tp.priorities_cycle()
    alice_tqs = set(TaskQueue.objects.filter(owner=users["alice"]).values_list("id", flat=True))
    submit("alice", cpu_time=100, user_priority=9)  # into her existing TaskQueue
    figures = tp.priorities_cycle()
    assert figures["recomputed"] == len(alice_tqs)  # lhcb_user is not JobSharing
    assert figures["written"] > 0
    assert stored() == full_recompute()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_after_random_changes_the_cycle_stores_what_a_full_recompute_computes(
    waiting, fresh_state, submit, users, seed, django_capture_on_commit_callbacks
):
    rng = random.Random(seed)
    gdpconfig.set_value("EnableSharesCorrection", True)
    all_groups = {g.name: g for g in GridGroup.objects.all()}
    tp.priorities_cycle()
    for _ in range(12):
        for _ in range(rng.randint(1, 4)):
            what = rng.choice(["submit", "submit", "kill", "share", "share_direct", "usage"])
            # The services' own follow-ups (dropping emptied TaskQueues, recomputing a group
            # at once) run too: the cycle must learn what they stored.
            with django_capture_on_commit_callbacks(execute=True):
                if what == "submit":
                    submit(
                        rng.choice(USERS),
                        cpu_time=rng.choice([100, 5000, 100000, 200000]),
                        user_priority=rng.randint(0, 9),
                    )
                elif what == "kill":
                    live = list(Job.objects.filter(status=JobStatus.ACTIVATED))
                    if live:
                        job = rng.choice(live)
                        kill_job(job.pk, job.owner)
                elif what == "share":
                    group = all_groups[rng.choice(["lhcb_user", "lhcb_mc", "lhcb_data"])]
                    group_services.update_group(
                        GridGroup.objects.get(pk=group.pk),
                        {"job_share": float(rng.choice([100, 300, 5000, 40000]))},
                    )
                elif what == "share_direct":  # as a change the cycle alone picks up
                    group = all_groups[rng.choice(["lhcb_user", "lhcb_mc", "lhcb_data"])]
                    GridGroup.objects.filter(pk=group.pk).update(
                        job_share=float(rng.choice([50, 700, 9000]))
                    )
                else:
                    share_services.record_usage(
                        [
                            (all_groups[g].pk, users[u].pk, rng.randint(0, 50))
                            for g, u in (
                                ("lhcb_user", "alice"),
                                ("lhcb_user", "bob"),
                                ("lhcb_mc", "erin"),
                                ("lhcb_data", "dave"),
                            )
                        ]
                    )
        clock.advance(120)  # the corrector's records of each run at a time of their own
        tp.priorities_cycle()
        assert stored() == full_recompute()
    quiet = tp.priorities_cycle()
    assert quiet["written"] == 0
