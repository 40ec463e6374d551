"""Tasks the brokerage cannot place are alerts in the home page's health panel."""

import random

from brokerage.models import Storage, Task, TaskStatus
from brokerage.services.production import task_brokerage
from brokerage.topology_import import import_topology
from simulation import panda_demo as demo


def test_a_task_that_cannot_be_brokered_is_an_alert_on_its_owners_home_page(
    world, api, users, client
):
    import_topology(demo.topology())
    Storage.objects.filter(nucleus__isnull=False).update(space_free=0.0)
    body = {"name": "t", "owner_group": "lhcb_mc", "n_jobs": 2, "processing_type": "evgen"}
    r = api(users["erin"]).post("/api/v1/tasks/", body, format="json")
    assert r.status_code == 201, r.content
    task_brokerage(rng=random.Random(1))
    task = Task.objects.get(pk=r.data["id"])
    assert task.status == TaskStatus.PENDING
    client.force_login(users["erin"])
    page = client.get("/").content.decode()
    assert f'href="/brokerage/tasks/{task.pk}/"' in page
    assert f"Task {task.pk} t cannot be brokered:" in page
    client.force_login(users["alice"])  # not hers: not shown
    assert f"Task {task.pk} t cannot be brokered" not in client.get("/").content.decode()
