"""Every path that changes a group's share (the Shares page's own form, the API, Django's admin)
goes through the one audited service: each change is in "Changes to groups", revertible."""

import pytest

from shares.models import GridGroup, GroupChange


@pytest.fixture
def mc(world):
    return GridGroup.objects.get(name="lhcb_mc")


def _form(group, **fields) -> dict:
    """What the Shares page's form for `group` posts: its fields carry the group's prefix."""
    values = {"job_share": str(group.job_share), "comment": ""}
    if group.job_sharing:
        values["job_sharing"] = "on"
    if group.generic_pilot:
        values["generic_pilot"] = "on"
    values.update(fields)
    return {f"g{group.pk}-{name}": value for name, value in values.items() if value is not None}


def test_staff_change_a_jobshare_with_the_shares_pages_own_form_and_it_is_recorded(
    client, users, mc
):
    client.force_login(users["admin"])
    page = client.get("/shares/").content.decode()
    assert all(f'name="{name}"' in page for name in _form(mc))  # the form the page draws
    r = client.post(
        f"/shares/groups/{mc.pk}/", _form(mc, job_share="500", comment="more MC"), follow=True
    )
    assert "lhcb_mc saved." in r.content.decode()
    mc.refresh_from_db()
    assert mc.job_share == 500
    change = GroupChange.objects.get(group=mc)
    assert (change.field, change.old, change.new) == ("job_share", 300.0, 500.0)
    assert change.comment == "more MC" and change.changed_by == users["admin"]


def test_a_bad_jobshare_on_the_shares_page_is_named_and_changes_nothing(client, users, mc):
    client.force_login(users["admin"])
    r = client.post(f"/shares/groups/{mc.pk}/", _form(mc, job_share="-5"), follow=True)
    assert r.status_code == 400
    assert "JobShare must be between 0 and 1,000,000, got -5" in r.content.decode()
    mc.refresh_from_db()
    assert mc.job_share == 300 and not GroupChange.objects.exists()


def test_a_revert_puts_the_share_back_as_a_new_recorded_change(client, users, mc):
    client.force_login(users["admin"])
    client.post(f"/shares/groups/{mc.pk}/", _form(mc, job_share="500"))
    change = GroupChange.objects.get()
    r = client.post(f"/shares/changes/{change.pk}/revert/", {"confirm": "yes"}, follow=True)
    assert "lhcb_mc JobShare is back to 300." in r.content.decode()
    mc.refresh_from_db()
    assert mc.job_share == 300
    assert GroupChange.objects.first().comment == f"revert of change {change.pk}"


def test_an_edit_in_djangos_admin_is_recorded_and_revertible(client, users, mc):
    client.force_login(users["admin"])
    r = client.post(
        f"/admin/shares/gridgroup/{mc.pk}/change/",
        {
            "name": "lhcb_mc",
            "description": mc.description,
            "job_share": "650",
            "job_sharing": "on",
            "comment": "MC campaign",
            "_save": "Save",
        },
    )
    assert r.status_code == 302, r.content.decode()[:2000]
    mc.refresh_from_db()
    assert mc.job_share == 650
    change = GroupChange.objects.get(group=mc)
    assert (change.old, change.new, change.comment) == (300.0, 650.0, "MC campaign")
    assert change.changed_by == users["admin"]
    client.post(f"/shares/changes/{change.pk}/revert/", {"confirm": "yes"})
    mc.refresh_from_db()
    assert mc.job_share == 300


def test_an_edit_in_the_admins_list_is_recorded_too(client, users, mc):
    client.force_login(users["admin"])
    r = client.post(
        "/admin/shares/gridgroup/",
        {
            "form-TOTAL_FORMS": "1",
            "form-INITIAL_FORMS": "1",
            "form-0-id": str(mc.pk),
            "form-0-job_share": "310",
            "form-0-job_sharing": "on",
            "_save": "Save",
        },
    )
    assert r.status_code == 302
    change = GroupChange.objects.get(group=mc)
    assert (change.old, change.new, change.comment) == (300.0, 310.0, "in the admin")


def test_an_api_patch_keeps_the_comment_it_is_given(api, users, mc):
    client = api(users["admin"])
    r = client.patch(
        f"/api/v1/groups/{mc.pk}/", {"job_share": 500, "comment": "MC campaign"}, format="json"
    )
    assert r.status_code == 200 and r.data["job_share"] == 500
    history = client.get(f"/api/v1/groups/{mc.pk}/changes/").data
    assert [(h["field"], h["comment"], h["changed_by"]) for h in history] == [
        ("job_share", "MC campaign", "admin")
    ]
    client.patch(f"/api/v1/groups/{mc.pk}/", {"job_share": 400}, format="json")
    assert GroupChange.objects.first().comment == "via the API"  # none given


def test_an_api_client_cannot_rename_a_group_behind_the_history(api, users, mc):
    r = api(users["admin"]).patch(f"/api/v1/groups/{mc.pk}/", {"name": "mc2"}, format="json")
    assert r.status_code == 400 and "name" in r.data
    assert GridGroup.objects.filter(name="lhcb_mc").exists()


def test_an_api_patch_with_an_unknown_key_answers_400_naming_it_and_changes_nothing(api, users, mc):
    r = api(users["admin"]).patch(
        f"/api/v1/groups/{mc.pk}/", {"jobshare": 500, "job_sharing": False}, format="json"
    )
    assert r.status_code == 400 and list(r.data) == ["jobshare"], r.data
    mc.refresh_from_db()
    assert (mc.job_share, mc.job_sharing) == (300.0, True)
    assert not GroupChange.objects.exists()
