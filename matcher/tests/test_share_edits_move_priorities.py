"""A JobShare edited on any path (the Shares page's form, the API, Django's admin, a revert)
changes the priorities of the group's TaskQueues once the edit commits: erin is lhcb_mc's only
user with waiting jobs, so her TaskQueue's priority is the group's JobShare."""

import pytest

from matcher.models import TaskQueue
from shares.models import GridGroup, GroupChange


@pytest.fixture
def mc(world):
    return GridGroup.objects.get(name="lhcb_mc")


@pytest.fixture
def erins_job(mc, submit, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = submit("erin", cpu_time=100)
    assert priority(job) == pytest.approx(300)
    return job


def priority(job) -> float:
    return TaskQueue.objects.get(pk=job.task_queue_id).priority


def _page_form(group, job_share: str) -> dict:
    """What the Shares page's form for `group` posts (its fields carry the group's prefix)."""
    values = {"job_share": job_share, "comment": "", "job_sharing": "on"}
    return {f"g{group.pk}-{name}": value for name, value in values.items()}


def test_a_jobshare_saved_with_the_shares_pages_form_reprioritises_the_groups_taskqueues(
    client, users, mc, erins_job, django_capture_on_commit_callbacks
):
    client.force_login(users["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"/shares/groups/{mc.pk}/", _page_form(mc, "600"))
    assert r.status_code == 302
    assert priority(erins_job) == pytest.approx(600)


def test_a_jobshare_patched_through_the_api_reprioritises_the_groups_taskqueues(
    api, users, mc, erins_job, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        r = api(users["admin"]).patch(f"/api/v1/groups/{mc.pk}/", {"job_share": 450}, format="json")
    assert r.status_code == 200
    assert priority(erins_job) == pytest.approx(450)


def test_a_jobshare_saved_in_djangos_admin_reprioritises_the_groups_taskqueues(
    client, users, mc, erins_job, django_capture_on_commit_callbacks
):
    client.force_login(users["admin"])
    form = {
        "name": "lhcb_mc",
        "description": mc.description,
        "job_share": "650",
        "job_sharing": "on",
        "_save": "Save",
    }
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"/admin/shares/gridgroup/{mc.pk}/change/", form)
    assert r.status_code == 302, r.content.decode()[:2000]
    assert priority(erins_job) == pytest.approx(650)


def test_a_reverted_jobshare_puts_the_priorities_back(
    client, users, mc, erins_job, django_capture_on_commit_callbacks
):
    client.force_login(users["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/shares/groups/{mc.pk}/", _page_form(mc, "600"))
    assert priority(erins_job) == pytest.approx(600)
    change = GroupChange.objects.get(group=mc)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/shares/changes/{change.pk}/revert/", {"confirm": "yes"})
    assert priority(erins_job) == pytest.approx(300)


def test_an_edit_that_leaves_the_share_as_it_was_recomputes_nothing(
    client, users, mc, erins_job, django_capture_on_commit_callbacks
):
    client.force_login(users["admin"])
    with django_capture_on_commit_callbacks() as after_commit:
        client.post(f"/shares/groups/{mc.pk}/", _page_form(mc, "300"))
    assert after_commit == []
