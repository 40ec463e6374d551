import pytest
from django.core.management import CommandError, call_command

from core import gdpconfig
from matcher import bulk
from matcher.models import Job, JobStatusHistory, TaskQueue, TaskQueueJob
from matcher.taskqueues import cpu_segment


def test_load_jobs_inserts_activated_jobs_each_in_the_taskqueue_of_its_definition(world):
    result = bulk.load_jobs(500, seed=3, batch_size=128)
    assert result.jobs == 500 == Job.objects.filter(status="activated").count()
    assert TaskQueueJob.objects.count() == 500 == JobStatusHistory.objects.count()
    assert result.taskqueues == TaskQueue.objects.count()
    segments = gdpconfig.get("CPUSegments")
    for job in Job.objects.select_related(None)[:200]:
        tq = TaskQueue.objects.get(pk=job.task_queue_id)
        assert tq.cpu_time == cpu_segment(job.cpu_time, segments)
        assert (tq.owner_id, tq.owner_group_id, tq.sites, tq.tags, tq.platforms) == (
            job.owner_id,
            job.owner_group_id,
            job.sites,
            job.tags,
            job.platforms,
        )
        assert TaskQueueJob.objects.get(job_id=job.pk).user_priority == job.user_priority


def test_no_loaded_taskqueue_is_empty(world):
    bulk.load_jobs(50, seed=1, batch_size=10)
    assert not TaskQueue.objects.exclude(members__isnull=False).exists()


def test_a_second_load_adds_to_the_same_taskqueues(world):
    bulk.load_jobs(100, seed=1)
    before = set(TaskQueue.objects.values_list("pk", flat=True))
    bulk.load_jobs(100, seed=1)
    assert Job.objects.count() == 200
    assert set(TaskQueue.objects.values_list("pk", flat=True)) <= before


def test_the_load_jobs_command_reports_what_it_loaded(world, capsys):
    call_command("load_jobs", "40", "--no-progress")
    assert "loaded 40 jobs" in capsys.readouterr().out


def test_load_jobs_refuses_a_non_positive_count(world):
    with pytest.raises(CommandError):
        call_command("load_jobs", "0")


def test_load_jobs_needs_a_world(db):
    with pytest.raises(CommandError, match="demo"):
        call_command("load_jobs", "5", "--no-progress")


def test_the_demo_command_is_safe_to_run_twice(db):
    call_command("demo", "--jobs", "30")
    call_command("demo", "--jobs", "30", "--if-empty")
    call_command("demo", "--jobs", "30")
    assert Job.objects.exclude(owner__username="tester").count() == 30
    assert Job.objects.filter(owner__username="tester").count() == 1  # the user guide's example
    from shares.models import GridGroup

    shares = dict(GridGroup.objects.values_list("name", "job_share"))
    assert shares["lhcb_user"] == 10000 and shares["lhcb_mc"] == 300
    assert shares["lhcb_data"] == 40000


def test_the_demo_adds_the_local_worker_node_and_follows_the_servers_url(db):
    from core import gdpconfig
    from matcher.models import ComputingElement

    call_command("demo", "--jobs", "0", "--pilots", "0", "--local-url", "http://127.0.0.1:8001")
    call_command("demo", "--if-empty", "--local-url", "http://127.0.0.1:8002")
    ce = ComputingElement.objects.get(name="localhost")
    assert (ce.site.name, ce.tags, ce.max_waiting_pilots) == ("DIRAC.Local.ch", ["payload"], 0)
    assert gdpconfig.get("LocalPilotURL") == "http://127.0.0.1:8002"
    assert gdpconfig.get("PayloadTags") == ["payload"]
    assert gdpconfig.get("PayloadSubmitPools") == ["Local"]


def test_loaded_jobs_are_counted_per_taskqueue_and_priority(world):
    from django.db.models import Count

    from matcher.models import TaskQueuePriorityCount

    bulk.load_jobs(400, seed=9, batch_size=150)
    real = {
        (r["task_queue_id"], r["user_priority"]): r["n"]
        for r in TaskQueueJob.objects.values("task_queue_id", "user_priority").annotate(
            n=Count("*")
        )
    }
    stored = {
        (c.task_queue_id, c.user_priority): c.jobs
        for c in TaskQueuePriorityCount.objects.filter(jobs__gt=0)
    }
    assert stored == real


def test_the_load_jobs_command_leaves_taskqueue_priorities_computed(world):
    call_command("load_jobs", "60", "--no-progress")
    tq = TaskQueue.objects.filter(owner_group__name="lhcb_data").first()
    if tq is not None:
        data_tqs = TaskQueue.objects.filter(owner_group__name="lhcb_data")
        assert sum(t.priority for t in data_tqs) == pytest.approx(40000)
    assert not TaskQueue.objects.filter(priority=1.0).exists()
