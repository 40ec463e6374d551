"""The matcher's view across processes on PostgreSQL: what another process creates, drops or
re-prioritises is seen through the change log without a full reload; a match that empties a
TaskQueue answers at once and the drop and the priorities follow in the background, with the
priorities exactly those of an inline recomputation."""

import multiprocessing

import pytest
from django.db import connection

from matcher import dispatcher
from matcher.matching import Resource
from matcher.models import Job, TaskQueue
from matcher.services import housekeeping
from matcher.taskqueue_priorities import recompute_priorities
from tests import _view_workers

pytestmark = pytest.mark.django_db(transaction=True)
ctx = multiprocessing.get_context("spawn")
CERN = Resource(site="LCG.CERN.ch", grid_ce="ce503.cern.ch", setup="any", cpu_time=86400)


def _priorities():
    return dict(TaskQueue.objects.values_list("id", "priority"))


def test_taskqueues_created_dropped_and_reprioritised_in_another_process_are_seen_without_a_reload(
    submit, users
):
    keep = submit("alice", cpu_time=100)
    doomed = submit("bob", cpu_time=100, sites=["LCG.CERN.ch"])
    recompute_priorities()
    seen = {t.id: t.priority for t in dispatcher.matching_taskqueues(CERN)}
    assert set(seen) == {keep.task_queue_id, doomed.task_queue_id}
    reloads = dispatcher.stats()["taskqueue_full_reloads"]
    out = ctx.Queue()
    child = ctx.Process(
        target=_view_workers.change_taskqueues,
        args=(connection.settings_dict["NAME"], users["alice"].pk, users["bob"].pk, doomed.pk, out),
    )
    child.start()
    created = out.get(timeout=120)
    child.join(60)
    assert child.exitcode == 0
    now = {t.id: t.priority for t in dispatcher.matching_taskqueues(CERN)}
    assert set(now) == {keep.task_queue_id, created}  # dropped gone, created in
    assert now == {tq: p for tq, p in _priorities().items() if tq in now}  # current weights
    assert now[keep.task_queue_id] != seen[keep.task_queue_id]  # bob left, alice has 2 TaskQueues
    assert dispatcher.stats()["taskqueue_full_reloads"] == reloads
    assert dispatcher.match_job(CERN, "p").task_queue_id in now


@pytest.mark.production_lifetimes
def test_a_match_that_empties_a_taskqueue_leaves_priorities_as_an_inline_recomputation_would(
    submit, monkeypatch
):
    monkeypatch.setattr(housekeeping, "RECOMPUTE_DELAY", 0.0)
    cern = ["LCG.CERN.ch"]
    submit("alice", cpu_time=100, user_priority=3, sites=cern)
    submit("alice", cpu_time=100, tags=["GPU"], sites=cern)
    bobs = submit("bob", cpu_time=100, sites=["LCG.PIC.es"])  # bob's only TaskQueue, at PIC
    submit("erin", cpu_time=100, sites=cern)
    recompute_priorities()
    before = _priorities()
    pic = Resource(site="LCG.PIC.es", grid_ce="ce07.pic.es", setup="any", cpu_time=1000)
    try:
        found = dispatcher.match_job(pic, "pic-1")
        assert found.job.id == bobs.pk
        assert housekeeping.housekeeper.idle(30)
    finally:
        housekeeping.housekeeper.stop()
    assert not TaskQueue.objects.filter(pk=bobs.task_queue_id).exists()
    background = _priorities()
    recompute_priorities(set(Job.objects.values_list("owner_group_id", flat=True)))
    assert _priorities() == background  # exactly, float for float
    changed = {tq for tq, p in background.items() if before[tq] != p}
    assert changed  # bob left lhcb_user: alice's TaskQueues share the whole group now
    assert dispatcher.stats()["housekeeping_drops"] >= 1
