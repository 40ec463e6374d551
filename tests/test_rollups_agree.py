"""The job counts the summaries read (matcher/services/rollups.py, matcher/job_counts.py) agree
with the job table counted by GROUP BY after every kind of move, folded or not; a move that
fails inside its transaction leaves them as they were; retention's purge takes its jobs out of
them; `rebuild` recounts; what a user and a JobSharing member read is what they may see. So do
the failed jobs' counts (matcher/services/failures.py): every row, its jobs and its lowest job
id, recounted from the job table (tests/failed_counts_check.py)."""

from __future__ import annotations

import io
import random
from collections import Counter
from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models import Count

from brokerage.topology_import import import_topology
from core import clock
from matcher import bulk, dispatcher, job_counts, services
from matcher.matching import Resource
from matcher.models import Job, JobCount, JobCountDelta, JobHourCount, JobStatusHistory
from matcher.services import rollups
from retention import services as retention
from simulation import demo as pilot_demo
from simulation import panda_demo
from simulation import services as simulation
from tests.failed_counts_check import assert_failed_agree

pytestmark = pytest.mark.django_db

CERN = Resource(site="LCG.CERN.ch", grid_ce="ce01.cern.ch", setup="any", cpu_time=1000)


def table_counts() -> dict[tuple, int]:
    rows = (
        Job.objects.order_by()
        .values_list("owner_id", "owner_group_id", "site", "status")
        .annotate(n=Count("*"))
    )
    return {tuple(r[:-1]): r[-1] for r in rows}


def assert_agree(when: str = "") -> None:
    """Read unfolded, then folded: both equal the job table's GROUP BY; the failed jobs' counts
    too."""
    expected = table_counts()
    assert job_counts.counts(None, job_counts.KEYS) == expected, f"unfolded {when}"
    assert_failed_agree(when)
    rollups.fold()
    assert not JobCountDelta.objects.exists()
    folded = {
        (o, g, site, st): n
        for o, g, site, st, n in JobCount.objects.values_list(
            "owner_id", "owner_group_id", "site", "status", "jobs"
        )
    }
    assert folded == expected, f"folded totals {when}"
    assert job_counts.counts(None, job_counts.KEYS) == expected, f"folded {when}"


def test_submit_claim_each_pilot_report_kill_and_reschedule_keep_the_counts_equal_to_the_table(
    users, submit
):
    jobs = [submit("alice", cpu_time=100, sites=["LCG.CERN.ch"]) for _ in range(6)]
    submit("bob")
    assert_agree("after submission")
    claimed = [dispatcher.match_job(CERN, f"p-{i}").job.id for i in range(5)]
    assert Job.objects.filter(pk__in=claimed, site="LCG.CERN.ch", status="sent").count() == 5
    assert_agree("after claims")
    services.report_job(claimed[0], "starting")
    services.report_job(claimed[1], "starting")
    services.report_job(claimed[1], "running")
    services.report_job(claimed[2], "starting")
    services.report_job(claimed[2], "running")
    services.report_job(claimed[2], "finished")
    services.report_job(claimed[3], "failed", "exit code 3")
    assert_agree("after the pilots' reports")
    # Which jobs the claims took is the draw's: kill one of alice's they left waiting.
    waiting = next(j.pk for j in jobs if j.pk not in claimed)
    services.kill_job(waiting, users["alice"], "no longer needed")
    services.kill_job(claimed[0], users["admin"], "no longer needed")
    services.reschedule_job(claimed[3], users["alice"])  # failed -> activated, site cleared
    assert Job.objects.get(pk=claimed[3]).site == ""
    outcome = services.act_on_jobs("kill", [claimed[1], claimed[4]], users["admin"], Job.objects)
    assert outcome.done
    assert_agree("after kills and reschedules")


def test_a_move_that_fails_inside_its_transaction_leaves_the_counts_as_they_were(users, submit):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    other = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    rollups.fold()
    before = job_counts.counts(None, job_counts.KEYS)
    with pytest.raises(RuntimeError), transaction.atomic():
        services.kill_job(job.pk, users["alice"])
        raise RuntimeError("crash after the move")
    with pytest.raises(RuntimeError), transaction.atomic():
        assert dispatcher.match_job(CERN, "p-1").job is not None
        raise RuntimeError("crash after the claim")
    with pytest.raises(RuntimeError), transaction.atomic():
        submit("alice", cpu_time=100)
        raise RuntimeError("crash after the submission")
    assert job_counts.counts(None, job_counts.KEYS) == before == table_counts()
    assert Job.objects.get(pk=other.pk).status == "activated"
    assert_agree("after the crashes")


def test_brokerage_holds_and_placement_and_task_definition_are_counted(world, users):
    owner = users["alice"]
    group = owner.grid_groups.first()
    spec = {"owner_group": group, "setup": "any", "cpu_time": 100, "name": "t"}
    defined = services.define_jobs(owner, [dict(spec) for _ in range(4)])
    assert_agree("after definition")
    ids = [j.pk for j in defined]
    with transaction.atomic():
        assert services.set_waiting_status(ids[:2], "pending", "held back") == 2
    assert_agree("after brokerage held two back")
    with transaction.atomic():
        assert services.activate_jobs({pk: ["LCG.CERN.ch"] for pk in ids}, "placed") == 4
    assert_agree("after brokerage placed them")


def test_bulk_loads_of_rows_and_of_copy_text_are_counted(world, users):
    bulk.load_jobs(120, seed=3, batch_size=50, workers=1)
    assert_agree("after a COPY load")
    owner = users["alice"]
    group_id = owner.grid_groups.values_list("pk", flat=True).first()
    spec = {"owner_id": owner.pk, "owner_group_id": group_id, "name": "n", "setup": "any"}
    with transaction.atomic():
        services.submission.enqueue_new_jobs(
            [{**spec, "cpu_time": 100, "user_priority": 1, "jdl": ""} for _ in range(7)], "bulk"
        )
    assert_agree("after the bulk rows")


def test_a_copy_load_without_its_numbers_is_counted_from_its_text(world, users):
    # moves.create_jobs given COPY text and no rollup reads the counts off the text.
    from matcher.services import moves, submission

    owner = users["alice"]
    group = owner.grid_groups.values_list("pk", flat=True).first()
    ids = moves.reserve_job_ids(3)
    at = clock.now().isoformat()
    lists = "\t".join(["[]"] * 8)
    jobs = "".join(
        f"{i}\t{owner.pk}\t{group}\tn\tany\t100\t{lists}\t1\tdefined\t\t\\N\t\t\t0\t{at}\t{at}\n"
        for i in ids
    )
    history = "".join(f"{i}\t{at}\t\tdefined\tdefined\n" for i in ids)
    new = moves.NewJobs("defined", submission.NEW_JOB_COLUMNS, jobs.encode(), (), history.encode())
    with transaction.atomic():
        moves.create_jobs(new, by=moves.DEFINITION)
    assert Job.objects.filter(status="defined").count() == 3
    assert_agree("after a load counted from its text")


def test_retention_purges_jobs_out_of_the_counts_and_keeps_the_hours(users, submit):
    jobs = [submit("alice", cpu_time=100, sites=["LCG.CERN.ch"]) for _ in range(3)]
    for job in jobs[:2]:
        services.kill_job(job.pk, users["alice"])
    rollups.fold()
    hours = sum(JobHourCount.objects.values_list("jobs", flat=True))
    gone = services.purge_jobs([j.pk for j in jobs])  # the purge retention runs per batch
    assert sorted(gone) == sorted(j.pk for j in jobs[:2])  # the live one stays
    assert_agree("after the purge")
    retention.run_retention(now=clock.now() + timedelta(days=3650))
    assert_agree("after a retention run")
    assert sum(JobHourCount.objects.values_list("jobs", flat=True)) == hours


def test_a_user_reads_their_own_and_a_jobsharing_members_their_groups_counts(users, submit):
    submit("alice")
    submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    submit("bob")
    for user in users.values():
        visible = Counter(
            Job.objects.visible_to(user).order_by().values_list("site", "status").distinct()
        )
        expected = {
            (site, st): Job.objects.visible_to(user).filter(site=site, status=st).count()
            for site, st in visible
        }
        assert job_counts.counts(user, ("site", "status")) == expected, user.username


def test_the_hours_count_each_state_entered_folded_or_not(users, submit):
    start = clock.now()
    jobs = [submit("alice", cpu_time=100, sites=["LCG.CERN.ch"]) for _ in range(3)]
    dispatcher.match_job(CERN, "p-1")
    services.kill_job(jobs[2].pk, users["alice"])
    unfolded = job_counts.entered_per_hour(None, start)
    rollups.fold()
    folded = job_counts.entered_per_hour(None, start)
    assert unfolded == folded
    per_state = Counter()
    for (_hour, _site, status), n in folded.items():
        per_state[status] += n
    assert per_state == Counter({"activated": 3, "sent": 1, "cancelled": 1})


def test_rebuild_recounts_what_was_written_past_the_mover(users, submit):
    job = submit("alice")
    Job.objects.filter(pk=job.pk).update(site="nowhere")  # a repair made by hand
    assert job_counts.counts(None, job_counts.KEYS) != table_counts()
    found = rollups.rebuild()
    assert found["jobs"] == Job.objects.count()
    assert_agree("after the rebuild")


@pytest.fixture
def simulated_grid(world, settings):
    settings.SIMULATED_CLOCK = True
    clock.invalidate()
    import_topology(panda_demo.topology())
    bulk.load_jobs(150, seed=7, batch_size=100)
    pilot_demo.first_pilots()
    yield
    clock.invalidate()


def test_the_simulated_grid_its_timeouts_and_dag_nodes_keep_the_counts_equal_to_the_table(
    simulated_grid, users, submit
):
    rng = random.Random(5)
    assert_agree("after the load")
    for tick in range(3):
        clock.advance(15 * 60)
        simulation.simulation_tick(rng=rng, minutes=15)
        live = list(Job.objects.filter(status__in=("activated", "running")).values_list("pk"))
        for (pk,) in live[:2]:
            services.kill_job(pk, users["admin"], "killed between ticks")
        assert_agree(f"tick {tick}")
    submit("alice", cpu_time=100, tags=["NoSuchTag"])  # waits until its timeout fires
    clock.advance(3 * 86400)
    simulation.simulation_tick(rng=rng, minutes=15)
    assert_agree("after the timeouts")
    moved = set(JobStatusHistory.objects.values_list("from_status", "to_status").distinct())
    assert {("defined", "activated"), ("activated", "sent")} <= moved


def test_the_job_counts_cycle_folds_and_the_command_recounts(users, submit):
    from django.core.management import call_command

    from core.cycles import run_cycle

    submit("alice")
    submit("bob")
    run = run_cycle("job_counts")
    assert run.status == "success" and run.counts == {"folded": 2}
    assert not JobCountDelta.objects.exists()
    Job.objects.filter(owner=users["bob"]).update(site="by-hand")
    out = io.StringIO()
    call_command("rebuild_job_counts", stdout=out)
    assert '"jobs": 2' in out.getvalue()
    assert_agree("after the command")
