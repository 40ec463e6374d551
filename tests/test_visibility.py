"""One rule for who sees and who acts on an owned row (shares.ownership), whatever the model:
the owner, members of the owner's group when it has JobSharing, and staff."""

import pytest
from django.utils import timezone

from brokerage.models import Task, TaskStatus
from classads.models import JobAd
from matcher.models import Job, TaskQueue
from shares.models import GridGroup, User
from shares.ownership import may_act_on


@pytest.fixture
def people(db):
    sharing = GridGroup.objects.create(name="vis_sharing", job_sharing=True)
    plain = GridGroup.objects.create(name="vis_plain", job_sharing=False)
    made = {
        name: User.objects.create(username=f"vis_{name}", is_staff=name == "staff")
        for name in ("owner", "sharing_mate", "plain_mate", "stranger", "staff")
    }
    made["owner"].grid_groups.set([sharing, plain])
    made["sharing_mate"].grid_groups.set([sharing])
    made["plain_mate"].grid_groups.set([plain])
    return {"groups": {"sharing": sharing, "plain": plain}, **made}


def _job(owner, group, n):
    now = timezone.now()
    return Job.objects.create(
        owner=owner,
        owner_group=group,
        setup="Prod",
        cpu_time=100,
        created=now,
        status_changed=now,
    )


def _taskqueue(owner, group, n):
    return TaskQueue.objects.create(
        key=f"vis-{group.name}-{n}",
        owner=owner,
        owner_group=group,
        setup="Prod",
        cpu_time=100,
        created=timezone.now(),
    )


def _task(owner, group, n):
    now = timezone.now()
    return Task.objects.create(
        name=f"vis {n}",
        owner=owner,
        owner_group=group,
        setup="Prod",
        status=TaskStatus.PENDING,
        created=now,
        modified=now,
    )


def _job_ad(owner, group, n):
    return JobAd.objects.create(
        owner=owner,
        owner_group=group,
        setup="Prod",
        text="[ Requirements = true ]",
        digest=f"{n:040d}",
        created=timezone.now(),
    )


OWNED = {Job: _job, TaskQueue: _taskqueue, Task: _task, JobAd: _job_ad}


@pytest.fixture(params=list(OWNED), ids=lambda model: model.__name__)
def rows(request, people):
    """One row of the model owned by `owner` in its JobSharing group, one in its plain group."""
    model = request.param
    make = OWNED[model]
    return model, {
        kind: make(people["owner"], group, n)
        for n, (kind, group) in enumerate(people["groups"].items())
    }


def _seen(model, user) -> set[int]:
    return set(model.objects.visible_to(user).values_list("pk", flat=True))


def test_the_owner_sees_and_acts_on_its_rows_in_every_group(people, rows):
    model, row = rows
    assert _seen(model, people["owner"]) == {row["sharing"].pk, row["plain"].pk}
    assert all(may_act_on(people["owner"], r) for r in row.values())


def test_a_member_of_a_jobsharing_group_sees_and_acts_on_that_groups_rows(people, rows):
    model, row = rows
    assert _seen(model, people["sharing_mate"]) == {row["sharing"].pk}
    assert may_act_on(people["sharing_mate"], row["sharing"])


def test_a_member_of_a_group_without_jobsharing_neither_sees_nor_acts_on_its_rows(people, rows):
    model, row = rows
    assert _seen(model, people["plain_mate"]) == set()
    assert not may_act_on(people["plain_mate"], row["plain"])
    assert not may_act_on(people["plain_mate"], row["sharing"])


def test_a_user_outside_the_owners_groups_sees_and_acts_on_nothing(people, rows):
    model, row = rows
    assert _seen(model, people["stranger"]) == set()
    assert not any(may_act_on(people["stranger"], r) for r in row.values())


def test_staff_see_and_act_on_every_row(people, rows):
    model, row = rows
    assert _seen(model, people["staff"]) == set(model.objects.values_list("pk", flat=True))
    assert all(may_act_on(people["staff"], r) for r in row.values())


def test_who_may_act_on_a_row_is_exactly_who_sees_it(people, rows):
    model, row = rows
    for name in ("owner", "sharing_mate", "plain_mate", "stranger", "staff"):
        seen = _seen(model, people[name])
        for r in row.values():
            assert may_act_on(people[name], r) == (r.pk in seen), (name, r)
