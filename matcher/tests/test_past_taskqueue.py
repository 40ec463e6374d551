"""A TaskQueue vanishes when its last waiting job leaves, but pilots and jobs keep its id: its
page still answers, with what is known of it, so that no link to it is dead."""

from core import clock
from matcher import services
from matcher.models import TaskQueue
from pilots.models import Pilot


def _emptied_taskqueue(submit, users):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    tq_id = job.task_queue_id
    now = clock.now()
    pilot = Pilot.objects.create(
        reference="sim://ce503.cern.ch/1",
        task_queue_id=tq_id,
        owner_dn=users["alice"].dn,
        owner_group="lhcb_user",
        private=True,
        submit_pool="gLite",
        site="LCG.CERN.ch",
        ce="ce503.cern.ch",
        status="Done",
        submitted=now,
        status_changed=now,
        credential_user=users["alice"],
    )
    services.kill_job(job.pk, users["alice"])
    assert not TaskQueue.objects.filter(pk=tq_id).exists()  # it emptied and went
    return job, tq_id, pilot


def test_a_pilots_link_to_an_emptied_taskqueue_opens_its_past_page(client, users, submit):
    job, tq_id, pilot = _emptied_taskqueue(submit, users)
    client.force_login(users["admin"])
    assert f'href="/taskqueues/{tq_id}/"' in client.get("/pilots/").content.decode()
    assert f'href="/taskqueues/{tq_id}/"' in client.get(f"/pilots/{pilot.pk}/").content.decode()
    r = client.get(f"/taskqueues/{tq_id}/")
    assert r.status_code == 200
    html = r.content.decode()
    assert f"TaskQueue {tq_id}" in html and "gone" in html
    assert f'href="/jobs/{job.pk}/"' in html and "cancelled" in html  # where its job went
    assert f'href="/pilots/{pilot.pk}/"' in html  # the pilot sent for it
    assert f'href="/jobs/?task_queue={tq_id}"' in html


def test_a_past_taskqueue_shows_its_owner_what_they_may_see_and_nobody_else(client, users, submit):
    job, tq_id, _pilot = _emptied_taskqueue(submit, users)
    client.force_login(users["alice"])
    assert client.get(f"/taskqueues/{tq_id}/").status_code == 200
    assert f'href="/taskqueues/{tq_id}/"' in client.get(f"/jobs/{job.pk}/").content.decode()
    client.force_login(users["bob"])
    assert client.get(f"/taskqueues/{tq_id}/").status_code == 404
    client.force_login(users["admin"])
    assert client.get(f"/taskqueues/{tq_id + 1000}/").status_code == 404  # never existed
