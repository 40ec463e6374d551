"""Tasks that run real work on `make run`: the demo world has a PanDA queue at the local worker
node, with room for outputs, and the brokerage does not skip it for having no pilot yet: the
director starts its pilots once jobs wait there (docs/user-guide.md, Tasks that run real work)."""

from __future__ import annotations

import io
import random
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from brokerage import checks
from brokerage.models import PandaQueue, Task, TaskJob
from brokerage.services import world as brokerage_world
from brokerage.services.analysis import analysis_brokerage
from core import clock, gdpconfig
from matcher.models import Job
from simulation import panda_demo
from simulation.demo import LOCAL_SITE


@pytest.fixture
def demo_world(db):
    """The worlds `make run` builds: `demo --local-url` and `brokerage_demo` (no jobs, no
    pilots: only the topology and the demo's tasks)."""
    quiet = io.StringIO()
    call_command("demo", jobs=0, pilots=0, local_url="http://127.0.0.1:8000", stdout=quiet)
    call_command("brokerage_demo", stdout=quiet)
    return PandaQueue.objects.get(name=panda_demo.LOCAL_QUEUE)


def payload_task(**fields) -> dict:
    return {
        "kind": "analysis",
        "name": "user.alice.echo",
        "owner_group": "lhcb_user",
        "n_jobs": 2,
        "job_cpu_time": 60,
        "executable": "/bin/sh",
        "arguments": ["-c", "echo part %RNDM:1"],
        **fields,
    }


def _jobs(task_id: int) -> list[Job]:
    return list(Job.objects.filter(pk__in=TaskJob.objects.filter(task_id=task_id).values("job")))


def test_the_demo_has_a_queue_at_the_local_worker_node_with_room_for_outputs(demo_world):
    q = demo_world
    where = (q.site.name, q.computing_element.name, q.status)
    assert where == (LOCAL_SITE, "localhost", "brokeroff")
    assert q.output_storage.space_free > 0
    assert q.last_pilot is None  # nobody set a pilot time by hand


def test_a_payload_task_on_the_demo_is_brokered_to_the_local_queue_with_no_pilot_seen(
    demo_world, api, users
):
    alice = api(users["alice"])
    answer = alice.post("/api/v1/tasks/", payload_task(), format="json")
    assert answer.status_code == 201, answer.content
    task = Task.objects.get(pk=answer.json()["id"])
    assert task.site == panda_demo.LOCAL_QUEUE

    analysis_brokerage(rng=random.Random(1), task_ids=[task.pk])
    jobs = _jobs(task.pk)
    assert len(jobs) == 2
    assert {(j.status, tuple(j.sites)) for j in jobs} == {("activated", (LOCAL_SITE,))}


def test_the_demos_simulated_tasks_never_go_to_the_local_queue(demo_world):
    # brokerage_demo brokered its tasks: none of their jobs is at the local worker node, whose
    # real pilots would never take them (brokeroff: only tasks that name it).
    brokered = Job.objects.filter(pk__in=TaskJob.objects.values("job")).exclude(sites=[])
    assert brokered.exists()
    assert not brokered.filter(sites__contains=[LOCAL_SITE]).exists()


def test_brokerage_demo_adds_the_local_queue_to_a_topology_loaded_before(db):
    quiet = io.StringIO()
    call_command("demo", jobs=0, pilots=0, stdout=quiet)
    call_command("brokerage_demo", stdout=quiet)
    assert not PandaQueue.objects.filter(name=panda_demo.LOCAL_QUEUE).exists()  # no local CE

    call_command("demo", if_empty=True, local_url="http://127.0.0.1:8000", stdout=quiet)
    call_command("brokerage_demo", if_empty=True, stdout=quiet)
    assert PandaQueue.objects.filter(name=panda_demo.LOCAL_QUEUE).count() == 1
    call_command("brokerage_demo", if_empty=True, stdout=quiet)
    assert PandaQueue.objects.filter(name=panda_demo.LOCAL_QUEUE).count() == 1


def test_a_queue_whose_pilots_start_on_demand_counts_as_having_pilots(demo_world):
    loaded = {q.name: q for q in brokerage_world.load_queues()}
    local = loaded[panda_demo.LOCAL_QUEUE]
    assert local.pilots_on_demand and local.last_pilot is None
    ctx = SimpleNamespace(now=clock.now())
    assert checks.no_pilot(local, None, ctx) is None
    # The simulated queues' pilots come by themselves: theirs is still checked.
    cern = loaded["CERN-PROD_MCORE"]
    assert not cern.pilots_on_demand
    cern.last_pilot = None
    assert checks.no_pilot(cern, None, ctx) == {"last_pilot": None}


def test_with_no_local_backend_for_the_payload_pools_a_queue_with_no_pilot_is_skipped(
    demo_world, api, users
):
    # Payload jobs sent to a pool whose pilots are started elsewhere (external): nothing here
    # starts them on demand, so a queue with no pilot seen is skipped as any other.
    gdpconfig.set_value("PayloadSubmitPools", ["DIRAC"], comment="test")
    [local] = [q for q in brokerage_world.load_queues() if q.name == panda_demo.LOCAL_QUEUE]
    assert not local.pilots_on_demand
    assert checks.no_pilot(local, None, SimpleNamespace(now=clock.now())) == {"last_pilot": None}

    task_id = api(users["alice"]).post("/api/v1/tasks/", payload_task(), format="json").json()["id"]
    analysis_brokerage(rng=random.Random(1), task_ids=[task_id])
    assert {j.status for j in _jobs(task_id)} == {"defined"}
