"""Editing a JobShare on the Shares page, in Chromium at 1280 and 1600 px: the table fits its card,
each group's Edit opens its form under its row with every control in view (no sideways
scrolling), the form previews every group's expected share before Save, and a JobShare out of
its bounds is refused beside the field with nothing saved."""

import pytest

from simulation import demo

pytestmark = pytest.mark.browser

HUGE = "99999999999999999999"
GROUPS = ("lhcb_data", "lhcb_mc", "lhcb_pilot", "lhcb_test", "lhcb_user")


@pytest.fixture
def waiting(submit):
    """Waiting jobs in lhcb_user (alice), lhcb_mc (erin) and lhcb_data (dave)."""
    for name in ("alice", "erin", "dave"):
        submit(name, cpu_time=100)


def _open_shares(page, width):
    page.page.set_viewport_size({"width": width, "height": 900})
    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/shares/")


def _edit(page, group):
    """Click the group's Edit; its form's row, visible."""
    page.page.locator(f"tr.group-row[data-group={group}] a.edit-link").click()
    row = page.page.locator(f"tr.edit-row[data-group={group}]")
    row.wait_for(state="visible")
    return row


def _fits(page, width):
    card = page.page.locator("#groups")
    scroll, client = card.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert scroll <= client, (width, scroll, client)
    assert page.page.evaluate("document.documentElement.scrollWidth") <= width
    return card.bounding_box()


@pytest.mark.parametrize("width", [1280, 1600])
def test_every_control_of_every_groups_edit_is_in_view_without_sideways_scrolling(
    page, waiting, width
):
    _open_shares(page, width)
    card = _fits(page, width)
    for group in GROUPS:
        edit = page.page.locator(f"tr.group-row[data-group={group}] a.edit-link")
        box = edit.bounding_box()
        assert box["x"] + box["width"] <= card["x"] + card["width"], group
        row = _edit(page, group)
        controls = {
            "JobShare": row.locator("input[aria-label=JobShare]"),
            "JobSharing": row.locator("input[name$=-job_sharing]"),
            "GenericPilot": row.locator("input[name$=-generic_pilot]"),
            "comment": row.locator("input[aria-label=comment]"),
            "Save": row.locator("button", has_text="Save"),
            "Preview": row.locator("button", has_text="Preview"),
        }
        card = _fits(page, width)
        for name, control in controls.items():
            assert control.is_visible(), (group, name)
            box = control.bounding_box()
            assert box["x"] >= card["x"], (group, name, box)
            assert box["x"] + box["width"] <= card["x"] + card["width"], (group, name, box)
            assert box["x"] + box["width"] <= width, (group, name, box)
        # The group's row stays short (170 px with the form in it before): its own row holds it.
        assert page.page.locator(f"tr.group-row[data-group={group}]").bounding_box()["height"] < 100
    # The "why" sentences wrap within the card, whole.
    for reason in page.page.locator("tr.reason-row td").all():
        box = reason.bounding_box()
        assert box["x"] + box["width"] <= card["x"] + card["width"]
        assert reason.evaluate("e => e.scrollWidth <= e.clientWidth")
    page.screenshot(f"shares-edit-{width}")


def test_the_form_previews_every_groups_expected_share_before_save(page, waiting):
    from shares.models import GridGroup, GroupChange

    _open_shares(page, 1280)
    row = _edit(page, "lhcb_mc")
    share = row.locator("input[aria-label=JobShare]")
    assert share.input_value() == "300"  # as the table writes it
    assert (
        page.page.locator("tr.group-row[data-group=lhcb_data] td[data-k=job_share]").inner_text()
        == "40000"
    )
    share.fill("5000")
    expected = row.locator(".share-preview tr[data-group=lhcb_mc] td[data-k=expected]")
    expected.wait_for(state="visible")
    page.page.wait_for_function(
        "() => (document.querySelector('tr.edit-row[data-group=lhcb_mc] .preview-summary')"
        " || {}).textContent?.includes('5000')"
    )
    # 300, 10000 and 40000 wait: with 5000 for lhcb_mc, 5000 / 55000 of the grid.
    assert row.locator(".preview-summary").inner_text() == (
        "With JobShare 5000, lhcb_mc's expected share goes from 0.6 % to 9.1 % of the grid."
    )
    assert expected.inner_text() == "9.1 %"
    cell = row.locator(".share-preview tr[data-group=lhcb_data] td[data-k=expected]")
    assert cell.inner_text() == "72.7 %"
    assert "nothing waiting" in row.locator(".share-preview tr[data-group=lhcb_pilot]").inner_text()
    assert GridGroup.objects.get(name="lhcb_mc").job_share == 300  # nothing saved yet
    assert not GroupChange.objects.exists()
    page.screenshot("shares-preview")

    row.locator("input[aria-label=comment]").fill("more MC")
    row.locator("button", has_text="Save").click()
    page.page.wait_for_selector("text=lhcb_mc saved.")
    assert GridGroup.objects.get(name="lhcb_mc").job_share == 5000
    group_row = page.page.locator("tr.group-row[data-group=lhcb_mc]")
    assert group_row.locator("td[data-k=job_share]").inner_text() == "5000"
    assert group_row.locator("td[data-k=expected]").inner_text() == "9.1 %"
    assert _edit(page, "lhcb_mc").locator("input[aria-label=JobShare]").input_value() == "5000"


def test_an_out_of_bound_jobshare_is_refused_beside_the_field_and_nothing_is_saved(page, waiting):
    from shares.models import GridGroup, GroupChange

    _open_shares(page, 1280)
    row = _edit(page, "lhcb_mc")
    row.locator("input[aria-label=JobShare]").fill(HUGE)
    message = "JobShare must be between 0 and 1,000,000, got 1e+20."
    # Said as it is typed, by the preview ...
    row.locator(".edit-errors", has_text=message).wait_for(state="visible")
    assert row.locator(".share-preview").inner_text() == ""
    # ... and by the server, which refuses it.
    page.expect_error = True  # a refused value is answered 400, the page again with the error
    with page.page.expect_response(lambda r: r.request.method == "POST") as answer:
        row.locator("button", has_text="Save").click()
    assert answer.value.status == 400
    page.page.wait_for_load_state("load")
    page.problems = [p for p in page.problems if "status of 400" not in p]
    row = page.page.locator("tr.edit-row[data-group=lhcb_mc]")
    assert row.is_visible()  # open again, with what was typed
    assert row.locator(".edit-errors").inner_text() == message
    assert row.locator("input[aria-label=JobShare]").input_value() == HUGE
    assert GridGroup.objects.get(name="lhcb_mc").job_share == 300
    assert not GroupChange.objects.exists()
    _fits(page, 1280)
    page.screenshot("shares-refused")
