"""The matcher's view of the TaskQueues follows the change log: what another process changes is
seen within the refresh bound without reloading every TaskQueue, and a stale view never leads
to a wrong claim. `other` is a second view, as another process would hold: it learns only
through the log."""

import random
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from core import clock
from core.models import SimulationClock
from matcher import changelog, claims, dispatcher, races, services, taskqueue_view
from matcher.matching import Resource
from matcher.models import Job, JobStatus, TaskQueue, TaskQueueChange
from matcher.taskqueue_priorities import priorities_cycle, recompute_priorities
from shares.models import GridGroup

CERN = Resource(site="LCG.CERN.ch", grid_ce="ce503.cern.ch", setup="any", cpu_time=86400)


@pytest.fixture
def other(world):
    view = taskqueue_view.TaskQueueView()
    yield view


def tq_ids(view, resource=CERN):
    return sorted(i for race in view.races_for(resource) for i in race.ids)


def test_a_taskqueue_created_elsewhere_is_inserted_into_each_memoised_resource(other, submit):
    first = submit("alice", cpu_time=100)
    assert tq_ids(other) == [first.task_queue_id]
    fits = submit("bob", cpu_time=100, sites=["LCG.CERN.ch"])
    elsewhere = submit("bob", cpu_time=100, sites=["LCG.PIC.es"])
    assert tq_ids(other) == sorted([first.task_queue_id, fits.task_queue_id])
    assert other.definition(elsewhere.task_queue_id).sites == {"LCG.PIC.es"}
    assert other.stats["taskqueue_full_reloads"] == 1
    assert other.stats["taskqueue_memo_builds"] == 1  # inserted, not matched all over again


def test_a_taskqueue_dropped_elsewhere_leaves_the_definitions_and_every_resource(
    other, submit, users
):
    keep = submit("alice", cpu_time=100)
    gone = submit("bob", cpu_time=100)
    long_ones = Resource(site="any", setup="any", cpu_time=10**6)
    assert gone.task_queue_id in tq_ids(other) and gone.task_queue_id in tq_ids(other, long_ones)
    services.kill_job(gone.pk, users["bob"])  # its last job: the TaskQueue is dropped
    assert not TaskQueue.objects.filter(pk=gone.task_queue_id).exists()
    assert tq_ids(other) == [keep.task_queue_id] == tq_ids(other, long_ones)
    assert other.definition(gone.task_queue_id) is None
    assert other.stats["taskqueue_full_reloads"] == 1


def test_a_priority_change_updates_the_draw_weights_without_matching_again(
    other, submit, monkeypatch
):
    a = submit("alice", cpu_time=100)
    b = submit("alice", cpu_time=100, tags=["GPU"])
    recompute_priorities()
    other.refresh()
    resource = Resource(site="any", setup="any", cpu_time=1000, tags=frozenset({"any"}))
    [race] = other.races_for(resource)
    before = dict(zip(race.ids, race.weights, strict=True))
    assert before[a.task_queue_id] == pytest.approx(before[b.task_queue_id])
    for _ in range(9):
        submit("alice", cpu_time=100, tags=["GPU"])
    calls = []
    real = taskqueue_view.matching.first_failing_rule
    monkeypatch.setattr(
        taskqueue_view.matching, "first_failing_rule", lambda *a: calls.append(a) or real(*a)
    )
    recompute_priorities()
    [race] = other.races_for(resource)
    after = dict(zip(race.ids, race.weights, strict=True))
    assert after[b.task_queue_id] == pytest.approx(10 * after[a.task_queue_id])
    assert calls == []  # nothing was matched again
    assert other.stats["taskqueue_full_reloads"] == 1


@pytest.mark.production_lifetimes
def test_a_view_reads_the_log_at_most_once_per_refresh_bound(
    other, submit, monkeypatch, django_assert_num_queries
):
    now = [1000.0]
    monkeypatch.setattr(taskqueue_view.time, "monotonic", lambda: now[0])
    submit("alice", cpu_time=100)
    other.refresh()
    late = submit("bob", cpu_time=100, sites=["LCG.CERN.ch"])
    now[0] += 0.9
    with django_assert_num_queries(0):
        assert late.task_queue_id not in tq_ids(other)  # within the bound: not asked yet
    now[0] += 0.2
    assert late.task_queue_id in tq_ids(other)  # past the bound: seen
    assert other.stats["taskqueue_full_reloads"] == 1


def test_an_entry_committed_after_a_later_one_was_read_is_still_applied(other, submit):
    """Sequence numbers are handed out in insertion order, transactions commit in their own:
    the numbers skipped over are asked for again."""
    a = submit("alice", cpu_time=100)
    b = submit("bob", cpu_time=100)
    other.refresh()
    top = other.max_seen
    now = clock.now()
    TaskQueueChange.objects.create(
        seq=top + 2, kind="priority", task_queue_id=b.task_queue_id, priority=7.0, at=now
    )
    other.refresh()
    assert top + 1 in other.holes and other.priority[b.task_queue_id] == 7.0
    TaskQueueChange.objects.create(
        seq=top + 1, kind="priority", task_queue_id=a.task_queue_id, priority=3.0, at=now
    )
    other.refresh()
    assert other.priority[a.task_queue_id] == 3.0 and top + 1 not in other.holes
    assert other.stats["taskqueue_full_reloads"] == 1


def test_a_view_behind_a_trimmed_log_reloads_and_one_up_to_date_does_not(world, submit):
    behind, current = taskqueue_view.TaskQueueView(), taskqueue_view.TaskQueueView()
    submit("alice", cpu_time=100)
    behind.refresh()
    fresh = submit("bob", cpu_time=100)
    current.refresh()
    with transaction.atomic():  # as the cycle would, RETENTION of real time later
        assert changelog.trim(timezone.now() + changelog.RETENTION + timedelta(seconds=60)) > 0
    current.refresh()
    behind.refresh()
    assert current.stats["taskqueue_full_reloads"] == 1
    assert behind.stats["taskqueue_full_reloads"] == 2
    assert fresh.task_queue_id in behind.tqs


def test_the_log_keeps_real_time_while_the_simulated_clock_runs_fast(other, submit, settings):
    """The change log is machinery, not grid time: stamped and trimmed by the wall clock. Under
    `make run` the grid's clock runs 60 times faster; its RETENTION must still be real minutes,
    or a process idle for ten real seconds would reload every TaskQueue."""
    submit("alice", cpu_time=100)
    other.refresh()
    real = timezone.now()
    settings.SIMULATED_CLOCK = True
    SimulationClock.objects.create(
        pk=1, running=True, speed=60, anchor_real=real - timedelta(hours=1), anchor_sim=real
    )
    clock.invalidate()
    try:
        assert clock.now() - timezone.now() > 50 * changelog.RETENTION  # 59 grid hours ahead
        start = TaskQueueChange.objects.order_by("-seq").values_list("seq", flat=True).first()
        fresh = submit("bob", cpu_time=100)
        result = priorities_cycle()  # recomputes (and logs) priorities, then trims the log
        assert result["trimmed_changes"] == 0
        stamps = TaskQueueChange.objects.filter(seq__gt=start).values_list("at", flat=True)
        assert stamps and all(abs(at - timezone.now()) < timedelta(minutes=1) for at in stamps)
        other.refresh()
        assert fresh.task_queue_id in other.tqs
        assert other.stats["taskqueue_full_reloads"] == 1  # followed the log, no reload
        with transaction.atomic():  # RETENTION of real time later, the same entries do go
            assert changelog.trim(timezone.now() + changelog.RETENTION + timedelta(seconds=1)) > 0
    finally:
        clock.invalidate()


def test_the_audit_repairs_a_change_that_bypassed_the_log(other, submit):
    job = submit("alice", cpu_time=100)
    other.refresh()
    TaskQueue.objects.filter(pk=job.task_queue_id).update(priority=123.0)  # no log entry
    other.refresh()
    assert other.priority[job.task_queue_id] != 123.0
    other.audit()
    assert other.priority[job.task_queue_id] == 123.0
    assert other.stats["taskqueue_audit_repairs"] == 1
    assert other.stats["taskqueue_full_reloads"] == 1


def test_a_stale_view_never_hands_out_a_job_that_left_its_taskqueue(submit, users, settings):
    job = submit("alice", cpu_time=100)
    assert [t.id for t in dispatcher.matching_taskqueues(CERN)] == [job.task_queue_id]
    settings.TASKQUEUE_VIEW_REFRESH_SECONDS = 3600.0  # the view stays stale
    services.kill_job(job.pk, users["alice"])  # and its TaskQueue is dropped
    assert job.task_queue_id in dispatcher.view.tqs
    assert dispatcher.match_job(CERN, "stale") is None
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.pilot_reference == ""


def test_a_private_pilot_with_a_stale_view_of_jobsharing_takes_no_other_owners_job(
    submit, users, settings
):
    erins = submit("erin", cpu_time=100)  # lhcb_mc has JobSharing: carol's pilots may take it
    mc = GridGroup.objects.get(name="lhcb_mc")
    carols_pilot = Resource(
        site="LCG.CERN.ch",
        setup="any",
        cpu_time=1000,
        owner_id=users["carol"].pk,
        owner_group_id=mc.pk,
        private=True,
    )
    assert [t.id for t in dispatcher.matching_taskqueues(carols_pilot)] == [erins.task_queue_id]
    settings.TASKQUEUE_VIEW_REFRESH_SECONDS = 3600.0
    from matcher.services.groups import update_group

    update_group(mc, {"job_sharing": False})
    assert dispatcher.view.tqs[erins.task_queue_id].job_sharing  # stale
    assert dispatcher.match_job(carols_pilot, "carol-1") is None  # the claim checked the group
    erins.refresh_from_db()
    assert erins.status == JobStatus.ACTIVATED
    settings.TASKQUEUE_VIEW_REFRESH_SECONDS = 0.0
    assert dispatcher.matching_taskqueues(carols_pilot) == []  # the view caught up: not hers
    erins_pilot = Resource(**{**carols_pilot.__dict__, "owner_id": users["erin"].pk})
    assert dispatcher.match_job(erins_pilot, "erin-1").job.id == erins.pk


def test_a_taskqueue_refilled_before_its_drop_is_kept_and_drawn_again(world, submit):
    from matcher.services.housekeeping import Housekeeper

    job = submit("alice", cpu_time=100)
    tq = job.task_queue_id
    view = dispatcher.view
    assert tq_ids(view) == [tq]
    view.park([tq])  # this process emptied it, as a match would
    assert tq_ids(view) == []
    again = submit("alice", cpu_time=100)  # a submission refills it before the drop
    assert again.task_queue_id == tq
    keeper = Housekeeper()
    keeper._drop([([tq], view.dropped_or_kept)])
    assert TaskQueue.objects.filter(pk=tq).exists()
    assert tq_ids(view) == [tq]
    assert dispatcher.match_job(CERN, "p").job.id in {job.pk, again.pk}


@pytest.mark.parametrize("mode", ["proportional", "dirac"])
def test_the_claim_draws_the_user_priority_that_the_formula_gives_for_its_numbers(
    world, submit, mode
):
    jobs = [submit("alice", cpu_time=100, user_priority=p) for p in (1, 1, 1, 4, 4, 9)]
    tq = jobs[0].task_queue_id
    counts = {1: 3, 4: 2, 9: 1}
    seen = set()
    for seed in range(40):
        numbers = random.Random(seed)
        uniforms = [1.0 - numbers.random() for _ in range(claims.USER_PRIORITIES)]
        expected = races.winning_user_priority(counts, uniforms, mode)
        with transaction.atomic():
            got = claims.claim_in(tq, CERN, "p", random.Random(seed), mode)
            assert got.job.user_priority == expected and got.waiting == 6
            transaction.set_rollback(True)
        seen.add(expected)
    assert seen == {1, 4, 9}
    assert Job.objects.filter(status=JobStatus.ACTIVATED).count() == 6


def test_every_change_a_matcher_depends_on_is_in_the_log(world, submit, users):
    start = TaskQueueChange.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    job = submit("alice", cpu_time=100)
    recompute_priorities()
    services.kill_job(job.pk, users["alice"])
    GridGroup.objects.get(name="lhcb_user").save()
    kinds = list(
        TaskQueueChange.objects.filter(seq__gt=start).order_by("seq").values_list("kind", flat=True)
    )
    assert kinds == ["created", "priority", "dropped", "group"]
