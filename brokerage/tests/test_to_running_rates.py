"""The analysis brokerage's to-running rate (trr) per queue: the jobs that started running in the
hours of the last 6, read from the job counts' hour rollup, a brokered job at the queue its
brokerage chose when it ran at that queue's site, any other at its site's default queue."""

from datetime import timedelta

import pytest
from django.db import transaction

from brokerage.models import GlobalShare, PandaQueue, Task, TaskJob, TaskStatus
from brokerage.services import analysis as analysis_services
from brokerage.services import world
from brokerage.topology_import import import_topology
from core import clock
from matcher import services as job_services
from matcher.lifecycle import RUNNING, SENT
from matcher.services import moves
from shares.models import GridGroup
from simulation import panda_demo as demo


@pytest.fixture
def panda(world):
    import_topology(demo.topology())
    for name, target in demo.GLOBAL_SHARES:
        GlobalShare.objects.create(name=name, target_pct=target)


def start_running(job, site: str, at=None) -> None:
    """The job claimed at `site` and started, through the job writer (its moves counted)."""
    with transaction.atomic():
        locked = moves.lock_job(job.pk)
        moves.move_job(locked, SENT, "claimed", by=moves.CLAIM, now=at, site=site)
        moves.move_job(locked, RUNNING, "started", by=moves.PILOT_REPORT, now=at)


def test_the_rate_counts_the_starts_of_the_window_at_the_brokered_or_the_default_queue(
    panda, users
):
    alice = users["alice"]
    group = GridGroup.objects.get(name="lhcb_user")
    jobs = job_services.submit_jobs(
        alice, [{"owner_group": group, "setup": "Production", "cpu_time": 100}] * 5
    )
    task = Task.objects.create(
        kind=Task.Kind.ANALYSIS,
        name="user.alice.trr",
        owner=alice,
        owner_group=group,
        status=TaskStatus.RUNNING,
        created=clock.now(),
        modified=clock.now(),
    )
    analy_cern = PandaQueue.objects.get(name="ANALY_CERN")
    for job in jobs[:2]:  # brokered to ANALY_CERN
        TaskJob.objects.create(job=job, task=task, queue=analy_cern)
    start_running(jobs[0], "LCG.CERN.ch")  # ran where it was brokered: at ANALY_CERN
    start_running(jobs[1], "LCG.PIC.es")  # ran elsewhere: at PIC's default queue
    start_running(jobs[2], "LCG.CERN.ch")  # not brokered: at CERN's default queue
    start_running(jobs[3], "LCG.CERN.ch")
    start_running(jobs[4], "LCG.CERN.ch", at=clock.now() - timedelta(hours=7))  # too old

    now = clock.now()
    queues = world.load_queues(now)
    trr = analysis_services.to_running_rates(queues, now)

    hour = now.replace(minute=0, second=0, microsecond=0)
    hours = (now - (hour - timedelta(hours=5))).total_seconds() / 3600
    default, _site_of = world.site_queues()
    assert default["LCG.CERN.ch"] != analy_cern.pk
    assert trr[analy_cern.pk] == pytest.approx(1 / hours)
    assert trr[default["LCG.CERN.ch"]] == pytest.approx(2 / hours)
    assert trr[default["LCG.PIC.es"]] == pytest.approx(1 / hours)
    assert sum(trr.values()) == pytest.approx(4 / hours)
