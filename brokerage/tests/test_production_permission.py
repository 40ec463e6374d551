"""Production tasks need a group with the ProductionManagement property (DIRAC's group
property); analysis tasks stay open to every user. The same rule in the API and the form."""

from brokerage.models import Task
from shares.models import GridGroup, GroupChange

TASK = {"name": "t", "n_jobs": 1}


def test_an_ordinary_user_cannot_submit_a_production_task_through_the_api(world, api, users):
    client = api(users["alice"])
    mine = {**TASK, "owner_group": "lhcb_user"}
    for body in (mine, {**mine, "kind": "production"}):
        r = client.post("/api/v1/tasks/", body, format="json")
        assert r.status_code == 400, r.content
        assert "ProductionManagement" in str(r.data["kind"])
    assert not Task.objects.exists()
    r = client.post("/api/v1/tasks/", {**mine, "kind": "analysis"}, format="json")
    assert r.status_code == 201
    assert Task.objects.get().kind == Task.Kind.ANALYSIS


def test_a_production_group_member_submits_production_tasks(world, api, users):
    assert GridGroup.objects.get(name="lhcb_mc").production_management
    assert GridGroup.objects.get(name="lhcb_data").production_management
    assert not GridGroup.objects.get(name="lhcb_user").production_management
    r = api(users["erin"]).post("/api/v1/tasks/", {**TASK, "owner_group": "lhcb_mc"}, format="json")
    assert r.status_code == 201
    assert Task.objects.get().kind == Task.Kind.PRODUCTION


def test_the_task_form_refuses_alice_a_production_task_and_takes_her_analysis_task(
    world, client, users
):
    client.force_login(users["alice"])
    page = client.get("/brokerage/tasks/submit/").content.decode()
    # Her only group has no production property: the form starts on an analysis task.
    assert '<option value="analysis" selected>' in page
    form = {
        "kind": "production",
        "name": "alice.prod",
        "owner_group": "lhcb_user",
        "processing_type": "simul",
        "core_count": 1,
        "ram_count": 1000,
        "cpu_time": 10,
        "n_jobs": 2,
        "n_events_per_job": 10,
    }
    r = client.post("/brokerage/tasks/submit/", form)
    assert r.status_code == 200
    assert "ProductionManagement" in r.content.decode()
    assert not Task.objects.exists()
    r = client.post("/brokerage/tasks/submit/", {**form, "kind": "analysis"})
    assert r.status_code == 302
    assert Task.objects.get().kind == Task.Kind.ANALYSIS


def test_staff_grant_the_property_through_the_groups_api_and_it_is_recorded(world, api, users):
    group = GridGroup.objects.get(name="lhcb_user")
    r = api(users["admin"]).patch(
        f"/api/v1/groups/{group.pk}/", {"production_management": True}, format="json"
    )
    assert r.status_code == 200 and r.data["production_management"] is True
    change = GroupChange.objects.get(group=group, field="production_management")
    assert (change.old, change.new, change.changed_by) == (False, True, users["admin"])
    r = api(users["alice"]).post(
        "/api/v1/tasks/", {**TASK, "owner_group": "lhcb_user"}, format="json"
    )
    assert r.status_code == 201
