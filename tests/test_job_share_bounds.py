"""A JobShare has bounds (0 to 1,000,000, like a live parameter's number) wherever it is edited:
the service, the API, the Shares page's form and Django's admin refuse a value out of them,
naming JobShare, and save nothing. The Shares page previews every group's expected share with a
new JobShare before it is saved, and says when a group's correction still reflects a recent
JobShare change."""

from datetime import timedelta

import pytest

from core import clock, gdpconfig
from matcher.services import groups
from shares import services
from shares.models import CorrectionRecord, GridGroup, GroupChange

HUGE = "99999999999999999999"


@pytest.fixture
def waiting(submit, django_capture_on_commit_callbacks):
    """Waiting jobs in lhcb_user (alice), lhcb_mc (erin) and lhcb_data (dave)."""
    with django_capture_on_commit_callbacks(execute=True):
        for name in ("alice", "erin", "dave"):
            submit(name, cpu_time=100)


def _unchanged(name="lhcb_mc", share=300.0):
    assert GridGroup.objects.get(name=name).job_share == share
    assert not GroupChange.objects.exists()


@pytest.mark.parametrize("value", [1e20, 10**20, -1, 1_000_000.5, float("nan"), float("inf")])
def test_the_service_refuses_a_jobshare_out_of_its_bounds_and_saves_nothing(users, value):
    mc = GridGroup.objects.get(name="lhcb_mc")
    with pytest.raises(services.ShareError) as refused:
        groups.update_group(mc, {"job_share": value}, users["admin"], "too much")
    assert refused.value.field == "job_share" and "JobShare" in refused.value.message
    _unchanged()


def test_the_service_takes_the_bounds_themselves(users):
    mc = GridGroup.objects.get(name="lhcb_mc")
    assert groups.update_group(mc, {"job_share": 1_000_000}, users["admin"]).job_share == 1e6
    assert groups.update_group(mc, {"job_share": 0}, users["admin"]).job_share == 0


def test_a_revert_to_a_jobshare_out_of_its_bounds_is_refused(users):
    mc = GridGroup.objects.get(name="lhcb_mc")
    # A change recorded before the bounds were enforced.
    old = GroupChange.objects.create(
        group=mc, field="job_share", old=1e20, new=300.0, at=clock.now(), comment="before"
    )
    with pytest.raises(services.ShareError, match="JobShare must be between 0 and 1,000,000"):
        groups.revert_change(old, users["admin"])
    assert GridGroup.objects.get(name="lhcb_mc").job_share == 300
    assert GroupChange.objects.count() == 1


def test_the_api_refuses_an_out_of_bound_jobshare_with_a_400_naming_the_field(api, users):
    mc = GridGroup.objects.get(name="lhcb_mc")
    client = api(users["admin"])
    for body in ({"job_share": 1e20}, {"job_share": -5}, {"job_share": 1_000_001}):
        r = client.patch(f"/api/v1/groups/{mc.pk}/", body, format="json")
        assert r.status_code == 400, body
        assert list(r.data) == ["job_share"], r.data
        assert "JobShare must be between 0 and 1,000,000" in str(r.data["job_share"][0])
    # The number as a client writes it, beyond 64 bits.
    raw = '{"job_share": ' + HUGE + "}"
    r = client.patch(f"/api/v1/groups/{mc.pk}/", raw, content_type="application/json")
    assert r.status_code == 400 and "job_share" in r.data
    _unchanged()
    r = client.post("/api/v1/groups/", {"name": "greedy", "job_share": 1e20}, format="json")
    assert r.status_code == 400 and "job_share" in r.data
    assert not GridGroup.objects.filter(name="greedy").exists()
    r = client.patch(f"/api/v1/groups/{mc.pk}/", {"job_share": 450}, format="json")
    assert r.status_code == 200 and GridGroup.objects.get(pk=mc.pk).job_share == 450


def test_the_shares_page_refuses_an_out_of_bound_jobshare_beside_the_field(client, users):
    mc = GridGroup.objects.get(name="lhcb_mc")
    client.force_login(users["admin"])
    r = client.post(
        f"/shares/groups/{mc.pk}/",
        {f"g{mc.pk}-job_share": HUGE, f"g{mc.pk}-job_sharing": "on", f"g{mc.pk}-comment": "x"},
    )
    assert r.status_code == 400
    html = r.content.decode()
    assert "JobShare must be between 0 and 1,000,000, got 1e+20." in html
    assert f'<tr class="edit-row open" id="edit-{mc.pk}"' in html  # open, with the value typed
    assert f'value="{HUGE}"' in html
    _unchanged()


def test_the_admin_refuses_an_out_of_bound_jobshare(client, users):
    mc = GridGroup.objects.get(name="lhcb_mc")
    client.force_login(users["admin"])
    r = client.post(
        f"/admin/shares/gridgroup/{mc.pk}/change/",
        {"name": "lhcb_mc", "description": "", "job_share": HUGE, "job_sharing": "on"},
    )
    assert r.status_code == 200  # the form again, with the error
    assert "JobShare must be between 0 and 1,000,000" in r.content.decode()
    _unchanged()


def test_the_page_shows_the_jobshare_as_its_table_does(client, users):
    client.force_login(users["admin"])
    html = client.get("/shares/").content.decode()
    data = GridGroup.objects.get(name="lhcb_data")
    assert f'name="g{data.pk}-job_share" value="40000"' in html
    assert "40000.0" not in html


def test_the_preview_gives_every_groups_expected_share_with_the_new_jobshare(
    waiting, client, users
):
    mc = GridGroup.objects.get(name="lhcb_mc")
    client.force_login(users["admin"])
    body = client.get(f"/shares/groups/{mc.pk}/", {"job_share": "5000"}).json()
    assert body["valid"] is True
    rows = {r["group"]: r for r in body["rows"]}
    # 300, 10000 and 40000 wait: with 5000 for lhcb_mc, 5000 / 55000 of the grid.
    assert rows["lhcb_mc"]["expected_now"] == pytest.approx(300 / 50300)
    assert rows["lhcb_mc"]["expected"] == pytest.approx(5000 / 55000)
    assert rows["lhcb_data"]["expected"] == pytest.approx(40000 / 55000)
    assert rows["lhcb_user"]["expected_text"] == "18.2 %"
    assert rows["lhcb_pilot"]["expected"] is None and not rows["lhcb_pilot"]["waiting"]
    assert body["summary"] == (
        "With JobShare 5000, lhcb_mc's expected share goes from 0.6 % to 9.1 % of the grid."
    )
    refused = client.get(f"/shares/groups/{mc.pk}/", {"job_share": HUGE}).json()
    assert refused == {
        "valid": False,
        "errors": {"job_share": ["JobShare must be between 0 and 1,000,000, got 1e+20."]},
    }
    _unchanged()


def test_the_preview_button_shows_the_shares_and_saves_nothing(waiting, client, users):
    mc = GridGroup.objects.get(name="lhcb_mc")
    client.force_login(users["admin"])
    r = client.post(
        f"/shares/groups/{mc.pk}/",
        {f"g{mc.pk}-job_share": "5000", f"g{mc.pk}-job_sharing": "on", "preview": "1"},
    )
    assert r.status_code == 200
    assert "lhcb_mc&#x27;s expected share goes from 0.6 % to 9.1 % of the grid" in (
        r.content.decode()
    )
    _unchanged()


def test_a_group_with_nothing_waiting_is_previewed_for_when_it_has(waiting, client, users):
    test = GridGroup.objects.get(name="lhcb_pilot")
    client.force_login(users["admin"])
    body = client.get(f"/shares/groups/{test.pk}/", {"job_share": "50300"}).json()
    assert body["summary"] == (
        "lhcb_pilot has no waiting jobs, so its JobShare counts only once it has some: with "
        "JobShare 50300, it would then expect 50.0 % of the grid."
    )


def test_the_preview_is_for_staff(client, users):
    mc = GridGroup.objects.get(name="lhcb_mc")
    client.force_login(users["alice"])
    assert client.get(f"/shares/groups/{mc.pk}/", {"job_share": "5"}).status_code == 403


def test_the_page_says_a_correction_still_reflects_a_recent_jobshare_change(waiting, client, users):
    gdpconfig.set_value("EnableSharesCorrection", True)
    mc = GridGroup.objects.get(name="lhcb_mc")
    groups.update_group(mc, {"job_share": 5000}, users["admin"], "more MC")
    now = clock.now()
    # The corrector's run after it: its slices (WeekSlice 7 d, HourSlice 1 h in the seed)
    # still average usage from before the change.
    CorrectionRecord.objects.create(
        at=now, instance="GroupsInstance", group=mc, user=None, slices={}, factor=2.0
    )
    client.force_login(users["admin"])
    html = client.get("/shares/").content.decode()
    assert '<tr class="memory-row" data-group="lhcb_mc">' in html
    assert "Its correction still reflects its JobShare change 300 → 5000" in html
    assert "WeekSlice (7 d) and HourSlice (1 h) still average usage from before it" in html
    # The API says the same of the group.
    body = client.get("/api/v1/shares/").json()
    [mc_row] = [g for g in body["groups"] if g["group"] == "lhcb_mc"]
    [remembered] = mc_row["remembered_changes"]
    assert (remembered["old"], remembered["new"]) == ("300", "5000")
    assert remembered["slices"] == ["WeekSlice (7 d)", "HourSlice (1 h)"]
    assert all(not g["remembered_changes"] for g in body["groups"] if g["group"] != "lhcb_mc")
    # Once its longest slice no longer reaches back before the change, nothing is said.
    GroupChange.objects.update(at=now - timedelta(days=8))
    html = client.get("/shares/").content.decode()
    assert 'class="memory-row"' not in html
    body = client.get("/api/v1/shares/").json()
    assert all(not g["remembered_changes"] for g in body["groups"])
