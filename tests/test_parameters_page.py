"""The live parameters page (/config/) as a client without scripts meets it: one row per
parameter, a search and a "changed from default" view that work through the address alone, a
refused value named at the top of the page, and "reset to default" asking first and stored as a
new version like any other change."""

import re

import pytest

from core import gdpconfig
from core.models import ParameterValue
from shares.corrections import SEED_EXAMPLE


@pytest.fixture
def staff(client, users):
    client.force_login(users["admin"])
    return client


def row(html: str, name: str) -> str:
    """The opening tag of the parameter's row."""
    return re.search(rf'<div class="param[^"]*" id="param-{name}"[^>]*>', html).group(0)


def test_a_search_in_the_address_hides_the_rows_that_do_not_match(staff):
    html = staff.get("/config/?q=reschedul").content.decode()
    assert "hidden" not in row(html, "MaxRescheduling")
    assert "hidden" in row(html, "AccountingDays")
    assert 'value="reschedul"' in html  # the box keeps the search
    assert re.search(r'id="cat-accounting"[^>]*hidden', html)  # and its empty category


def test_a_search_matches_every_word_of_the_help_whatever_the_case(staff):
    html = staff.get("/config/?q=HOW+many+REScheduled").content.decode()
    assert "hidden" not in row(html, "MaxRescheduling")
    assert "hidden" in row(html, "AccountingDays")


def test_the_changed_view_lists_a_changed_parameter_with_its_default_and_hides_the_others(
    staff, users
):
    gdpconfig.set_value("MaxRescheduling", 7, users["admin"], "more")
    html = staff.get("/config/?changed=1").content.decode()
    assert "hidden" not in row(html, "MaxRescheduling")
    assert 'data-changed="1"' in row(html, "MaxRescheduling")
    assert "hidden" in row(html, "AccountingDays")
    start = html.index('id="param-MaxRescheduling"')
    assert re.search(r"default <code[^>]*>3</code>", html[start : html.index("</form>", start)])


def test_every_parameter_is_one_row_on_the_page_with_one_form(staff):
    html = staff.get("/config/").content.decode()
    names = [*gdpconfig.REGISTRY, *(m.name for m in gdpconfig.family_members())]
    assert html.count('<div class="param') == len(names)
    assert html.count('name="name" value=') == len(names)
    assert not re.search(r"<div class=\"param[^>]*hidden", html)  # no filter: all shown


def test_a_refused_value_is_named_at_the_top_with_its_reason_and_its_field_gets_the_focus(
    staff,
):
    r = staff.post(
        "/config/?q=reschedul",
        {"name": "MaxRescheduling", "MaxRescheduling-value": "lots"},
    )
    assert r.status_code == 400
    html = r.content.decode()
    summary = html[
        html.index('id="error-summary"') : html.index("</div>", html.index("error-summary"))
    ]
    assert "Not saved" in summary
    assert '<a href="#id_MaxRescheduling-value">MaxRescheduling</a>: expected an integer' in summary
    assert html.index('id="error-summary"') < html.index('id="param-filter"')  # at the top
    field = re.search(r'<input[^>]*name="MaxRescheduling-value"[^>]*>', html).group(0)
    assert "autofocus" in field and 'aria-invalid="true"' in field
    assert "hidden" not in row(html, "MaxRescheduling")
    assert not ParameterValue.objects.filter(name="MaxRescheduling").exists()


def test_a_refused_value_outside_the_filter_is_shown_all_the_same(staff):
    r = staff.post(
        "/config/?q=accounting", {"name": "MaxRescheduling", "MaxRescheduling-value": "-1"}
    )
    assert r.status_code == 400
    html = r.content.decode()
    assert "hidden" not in row(html, "MaxRescheduling") and "refused" in row(
        html, "MaxRescheduling"
    )
    assert "must be at least 0" in html


def test_a_value_refused_against_the_database_is_a_400_naming_the_parameter_not_a_500(staff):
    import json

    # The seed's WMSHistory names lhcb_user; without that group the edit is refused on set.
    from shares.models import GridGroup

    GridGroup.objects.filter(name="lhcb_user").delete()
    r = staff.post("/config/", {"name": "WMSHistory", "WMSHistory-value": json.dumps(SEED_EXAMPLE)})
    assert r.status_code == 400
    html = r.content.decode()
    assert '<a href="#id_WMSHistory-value">WMSHistory</a>' in html and "lhcb_user" in html
    assert not ParameterValue.objects.filter(name="WMSHistory").exists()


def test_a_family_member_is_added_from_its_familys_row(staff):
    r = staff.post(
        "/config/",
        {
            "name": "DISK_THRESHOLD_<gshare>",
            "suffix": "Express",
            "DISK_THRESHOLD_<gshare>-value": "7",
        },
    )
    assert r.status_code == 302
    assert gdpconfig.family_value("DISK_THRESHOLD_<gshare>", "Express") == 7
    html = staff.get("/config/").content.decode()
    assert 'data-changed="1"' in row(html, "DISK_THRESHOLD_Express")


def test_a_family_member_without_its_suffix_is_named_at_the_top(staff):
    r = staff.post(
        "/config/",
        {"name": "DISK_THRESHOLD_<gshare>", "suffix": "", "DISK_THRESHOLD_<gshare>-value": "7"},
    )
    assert r.status_code == 400
    html = r.content.decode()
    summary = html[html.index('id="error-summary"') :]
    assert "give the gshare part" in summary[: summary.index("</ul>")]
    assert 'href="#id_DISK_THRESHOLD_&lt;gshare&gt;-suffix"' in summary
    assert not ParameterValue.objects.exists()


def test_reset_to_default_asks_first_then_stores_the_default_as_a_new_version_by_its_user(
    staff, users
):
    gdpconfig.set_value("MaxRescheduling", 7, users["admin"], "more")
    html = staff.get("/config/").content.decode()
    assert 'action="/config/MaxRescheduling/reset/"' in html
    assert 'data-confirm="Reset MaxRescheduling to its default, 3?' in html
    asked = staff.post("/config/MaxRescheduling/reset/")
    assert (
        asked.status_code == 200
        and "Reset MaxRescheduling to its default, 3?" in asked.content.decode()
    )
    assert ParameterValue.objects.filter(name="MaxRescheduling").count() == 1
    done = staff.post("/config/MaxRescheduling/reset/", {"confirm": "yes"})
    assert done.status_code == 302 and done["Location"] == "/config/#param-MaxRescheduling"
    gdpconfig.invalidate()
    assert gdpconfig.get("MaxRescheduling") == 3
    latest = ParameterValue.objects.filter(name="MaxRescheduling").order_by("-version").first()
    assert (latest.version, latest.value, latest.previous) == (2, 3, 7)
    assert latest.changed_by == users["admin"] and latest.comment == "reset to default"
    html = staff.get("/config/").content.decode()
    assert 'action="/config/MaxRescheduling/reset/"' not in html  # at its default: nothing to reset


def test_reset_to_default_is_for_staff_only(client, users):
    gdpconfig.set_value("MaxRescheduling", 7, users["admin"], "more")
    client.force_login(users["alice"])
    assert client.post("/config/MaxRescheduling/reset/", {"confirm": "yes"}).status_code == 403
    gdpconfig.invalidate()
    assert gdpconfig.get("MaxRescheduling") == 7
