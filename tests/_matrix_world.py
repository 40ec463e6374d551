"""One database state shared by every test of a module: built once inside an outer transaction
that is rolled back when the module is done. Each test's own `db` transaction nests inside it
as a savepoint, so what one test writes is gone before the next.

Use from a module-scoped fixture:

    @pytest.fixture(scope="module")
    def shared(django_db_setup, django_db_blocker):
        with shared_state(django_db_blocker, build) as state:
            yield state
"""

from contextlib import contextmanager

from django.db import transaction


@contextmanager
def shared_state(django_db_blocker, build):
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield build()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def build_demo(with_topology: bool = True) -> dict:
    """The demo world (sites, CEs, groups, users with tokens, the admin) and, if asked, the
    demo brokerage topology."""
    from simulation import demo

    demo.create_world()
    if with_topology:
        from brokerage.topology_import import import_topology
        from simulation import panda_demo as brokerage_demo

        import_topology(brokerage_demo.topology())
    from shares.models import User

    return {"users": {u.username: u for u in User.objects.all()}}


JOB_AD = "Requirements = Is_USCMS_Site =?= True\nRank = -CurMatches/MaxMatches\n"


def populate(users) -> dict:
    """One of each kind of object the API serves, created the way clients create them, so
    that detail endpoints have something to show. Returns their ids by name."""
    import random

    from rest_framework.test import APIClient

    from brokerage.services.production import task_brokerage
    from classads import semantics
    from core.cycles import run_cycle

    def client(user):
        c = APIClient()
        c.force_authenticate(users[user])
        return c

    def post(user, url, body):
        r = client(user).post(url, body, format="json")
        assert r.status_code in (200, 201), (url, r.status_code, r.content)
        return r.data

    ids = {
        "alice_job": submit_job(users["alice"], sites=["LCG.CERN.ch"]).pk,
        "bob_job": submit_job(users["bob"]).pk,
        "carol_job": submit_job(users["carol"], owner_group="lhcb_mc", cpu_time=50_000).pk,
        "carol_user_job": submit_job(users["carol"], owner_group="lhcb_user").pk,
        "dave_job": submit_job(users["dave"]).pk,
        "admin_job": submit_job(users["admin"], cpu_time=100).pk,
    }
    task = {"name": "t", "n_jobs": 2, "processing_type": "evgen"}
    ids["erin_task"] = post("erin", "/api/v1/tasks/", {**task, "owner_group": "lhcb_mc"})["id"]
    # alice's group has no ProductionManagement property: her task is an analysis task.
    alice_task = {**task, "owner_group": "lhcb_user", "kind": "analysis"}
    ids["alice_task"] = post("alice", "/api/v1/tasks/", alice_task)["id"]
    ids["site_ad"] = post("admin", "/api/v1/classads/sites/", {"ad": semantics.SEED_SITE_AD})[
        "site_ad"
    ]["id"]
    ids["carol_job_ad"] = post(
        "carol", "/api/v1/classads/jobs/", {"ad": JOB_AD, "owner_group": "lhcb_mc"}
    )["id"]
    ids["alice_job_ad"] = post("alice", "/api/v1/classads/jobs/", {"ad": JOB_AD})["id"]
    ids["pilot"] = post("pilot", "/api/v1/pilots/", {"reference": "p-1", "site": "LCG.CERN.ch"})[
        "id"
    ]
    ids["cycle_run"] = run_cycle("taskqueue_cleanup").pk
    task_brokerage(rng=random.Random(1))
    # A generic pilot takes dave's job as a private pilot of his group: the job is now the
    # pilot's to report on.
    matched = post(
        "pilot",
        "/api/v1/match/",
        {
            "site": "LCG.CERN.ch",
            "cpu_time": 10**6,
            "tag": [],
            "owner_group": "lhcb_data",
            "pilot_reference": "p-1",
        },
    )
    assert matched["id"] == ids["dave_job"], matched
    ids["matched_job"] = ids["dave_job"]
    r = client("admin").patch(
        f"/api/v1/groups/{users['alice'].grid_groups.get().pk}/",
        {"job_share": 12000},
        format="json",
    )
    assert r.status_code == 200, r.content
    return ids


def submit_job(user, **fields):
    """A job through the service layer, as the API would store it."""
    from api.matcher.serializers import JobSubmitSerializer, SubmissionContext
    from matcher import services

    fields.setdefault("cpu_time", 1000)
    s = JobSubmitSerializer(data=fields, context={"submission": SubmissionContext(user)})
    s.is_valid(raise_exception=True)
    [job] = services.submit_jobs(user, [s.validated_data])
    return job
