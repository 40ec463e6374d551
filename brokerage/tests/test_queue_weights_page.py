"""The Queue weights page shows the basic job-brokerage weight as the production rules give it
(production.basic_weight, the weight's first factor), not a copy of the formula."""

import random

import pytest

from brokerage import production
from brokerage.services import world
from brokerage.services.production import job_brokerage, task_brokerage
from brokerage.services.submission import submit_task
from brokerage.tests.factories import context, queue, task
from brokerage.topology_import import import_topology
from shares.models import GridGroup
from simulation import panda_demo as demo

PAGE = "/brokerage/queues/"


@pytest.fixture
def brokered(users):
    """The demo topology with a production task's jobs brokered: activated jobs at queues."""
    import_topology(demo.topology())
    group = GridGroup.objects.get(name="lhcb_mc")
    submit_task(users["erin"], {"name": "t", "owner_group": group, "n_jobs": 30}, [])
    task_brokerage(rng=random.Random(1))
    job_brokerage(rng=random.Random(1))


def test_the_page_shows_each_queues_basic_weight_from_the_rules(brokered, client, users):
    client.force_login(users["alice"])
    rows = client.get(PAGE).context["rows"]
    expected = {q.name: production.basic_weight(q) for q in world.load_queues()}
    assert len(rows) == len(expected) and any(r["counts"].get("activated") for r in rows)
    for r in rows:
        weight, factors = expected[r["queue"].name]
        assert r["weight"] == pytest.approx(weight)
        assert (r["running_used"], r["running_from"], r["many_assigned"]) == (
            factors["running"],
            factors["running_from"],
            factors["manyAssigned"],
        )
    assert [r["weight"] for r in rows] == sorted((r["weight"] for r in rows), reverse=True)


def test_the_page_takes_the_weight_from_the_rules(brokered, client, users, monkeypatch):
    def rule(q, input_local=False):
        return 0.125, {"running": 7, "running_from": "numSlots", "manyAssigned": 1.5}

    monkeypatch.setattr(production, "basic_weight", rule)
    client.force_login(users["alice"])
    r = client.get(PAGE)
    assert {row["weight"] for row in r.context["rows"]} == {0.125}
    assert "0.1250" in r.content.decode()


def test_the_basic_weight_counts_assigned_jobs_unless_the_input_is_local():
    # running 30; activated 10, assigned 20, starting 5, defined 5: manyAssigned 2,
    # 31 / ((10 + 20 + 5 + 5 + 10) × 2) = 0.31; with local input 31 / (10 + 5 + 5 + 10) = 31/30.
    q = queue(counts={"running": 30, "activated": 10, "assigned": 20, "starting": 5, "defined": 5})
    assert production.basic_weight(q)[0] == pytest.approx(0.31)
    w, factors = production.basic_weight(q, input_local=True)
    assert w == pytest.approx(31 / 30) and factors["assigned"] == 0
    # The job brokerage's weight starts from it: its `basic` factor is the same number.
    [c] = production.broker_jobs(task(), [q], context(totals=(0.0, 0))).candidates
    assert c.factors["basic"] == pytest.approx(31 / 30)
