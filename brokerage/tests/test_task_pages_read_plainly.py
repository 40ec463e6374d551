"""The task form and page speak plainly: a wrong dataset is named in a sentence (not a Python
repr of DRF's errors), parsed specs and network details are key/value pairs, numbers rounded."""

from brokerage.models import BrokerageRun
from brokerage.services.submission import submit_task
from core import clock
from shares.models import GridGroup


def test_a_task_with_an_unknown_dataset_is_refused_in_a_sentence(client, users):
    client.force_login(users["alice"])
    r = client.post(
        "/brokerage/tasks/submit/",
        {
            "name": "needs.data",
            "owner_group": "lhcb_user",
            "processing_type": "simul",
            "core_count": 1,
            "ram_count": 2000,
            "cpu_time": 100,
            "n_jobs": 1,
            "n_events_per_job": 100,
            "inputs": "no.such.dataset",
        },
    )
    assert r.status_code == 200
    html = r.content.decode()
    assert "There is no dataset named no.such.dataset." in html
    assert "ErrorDetail" not in html and "{0:" not in html


def test_a_task_page_rounds_its_numbers_and_lays_out_its_parsed_architecture(client, users):
    task = submit_task(
        users["alice"],
        {
            "name": "t.readable",
            "owner_group": GridGroup.objects.get(name="lhcb_user"),
            "cpu_time": 33.18000272488074,
            "architecture": "x86_64-el9-gcc13-opt",
            "n_jobs": 1,
        },
        [],
    )
    BrokerageRun.objects.create(
        task=task,
        kind="job",
        at=clock.now(),
        outcome="assigned",
        chosen=["CERN_Q"],
        trace=BrokerageRun.encode_trace(
            [
                ["CERN_Q", "", {"network": 1.8833, "network_detail": {"queued_w": 1.8667}}, 3.9],
                ["PIC_Q", "memory", {"ram_per_core": 4000.0, "maxrss": 2000}],
            ]
        ),
        removed_by={"memory": 1},
    )
    client.force_login(users["alice"])
    html = client.get(f"/brokerage/tasks/{task.pk}/").content.decode()
    assert "33.18 HS06 s/event" in html and "33.18000272488074" not in html
    assert "{&#x27;" not in html and "{'" not in html  # no Python dict anywhere
    assert "<dt>sw_platform</dt><dd>x86_64-el9-gcc13-opt</dd>" in html  # the parsed spec
    assert "<dt>queued_w</dt><dd>1.867</dd>" in html  # the network detail, nested
    assert "<dt>ram_per_core</dt><dd>4000</dd>" in html
