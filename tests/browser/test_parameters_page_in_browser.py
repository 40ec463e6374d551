"""The live parameters page (/config/) in Chromium at a laptop's width, driven through its own
forms: a refused value is said at the top of the window with its field scrolled to and focused,
the search box and the "changed from default" view filter the rows as one types, "reset to
default" asks first and leaves a version in the history, and the page never scrolls sideways."""

import pytest

from core import gdpconfig
from simulation import demo

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1280, 900
DEEP = "SimMaxWaitingJobs"  # in the last category: far down the page


@pytest.fixture
def config_page(page, transactional_db):
    demo.create_world()
    page.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/config/")
    return page


def in_window(locator, height=HEIGHT) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


def save(page, name, value):
    """Type a value into the parameter's own row and press its Save."""
    row = page.page.locator(f"#param-{name}")
    row.locator(f"[name='{name}-value']").fill(value)
    row.locator(f"[name='{name}-comment']").fill("from the browser test")
    row.locator("button[type=submit]").click()


def test_a_refused_value_is_said_at_the_top_of_the_window_with_its_field_in_view_and_focused(
    config_page,
):
    from core.models import ParameterValue

    page = config_page
    page.page.locator(f"#param-{DEEP}").scroll_into_view_if_needed()
    page.expect_error = True  # the refusal is answered 400: the page again, with the error
    with page.page.expect_response(lambda r: r.request.method == "POST") as answer:
        save(page, DEEP, "lots")
    assert answer.value.status == 400
    page.page.wait_for_load_state("load")
    page.problems = [p for p in page.problems if "status of 400" not in p]

    summary = page.page.locator("#error-summary")
    assert summary.is_visible() and in_window(summary)
    assert f"{DEEP}: expected an integer, got 'lots'" in summary.inner_text()
    field = page.page.locator(f"#id_{DEEP}-value")
    assert in_window(field)
    assert page.page.evaluate("window.scrollY") > 2 * HEIGHT  # scrolled far down, to the field
    assert page.page.evaluate("document.activeElement.id") == f"id_{DEEP}-value"
    assert "expected an integer" in page.page.locator(f"#param-{DEEP} .error").inner_text()
    assert not ParameterValue.objects.filter(name=DEEP).exists()
    gdpconfig.invalidate()
    assert gdpconfig.get(DEEP) == 4000
    page.screenshot("config-refused-value")


def test_the_search_box_hides_the_parameters_that_do_not_match_as_one_types(config_page):
    page = config_page
    page.page.locator("#param-q").fill("reschedul")
    assert page.page.locator("#param-MaxRescheduling").is_visible()
    assert page.page.locator(f"#param-{DEEP}").is_hidden()
    assert page.page.locator("#param-AccountingDays").is_hidden()
    assert page.page.locator("#cat-accounting").is_hidden()
    assert page.page.locator(".param-jump a[data-cat=accounting]").is_hidden()
    shown = page.page.locator(".param:visible").count()
    assert 1 <= shown < 10 and page.page.locator("#param-shown").inner_text() == str(shown)
    assert "q=reschedul" in page.page.url  # a reload, and each row's form, keep the filter
    page.page.locator("#param-q").fill("")
    assert page.page.locator("#param-AccountingDays").is_visible()


def test_without_scripts_the_search_works_through_the_address(page, transactional_db):
    from tests.browser.conftest import WatchedPage

    demo.create_world()
    context = page.page.context.browser.new_context(
        java_script_enabled=False, viewport={"width": WIDTH, "height": HEIGHT}
    )
    try:
        plain = WatchedPage(context.new_page(), page.base_url)
        plain.login("admin", demo.ADMIN_PASSWORD)
        plain.goto("/config/")
        plain.page.locator("#param-q").fill("reschedul")
        plain.page.locator("#param-filter button[type=submit]").click()
        plain.page.wait_for_url("**/config/?q=reschedul")
        assert plain.page.locator("#param-MaxRescheduling").is_visible()
        assert plain.page.locator("#param-AccountingDays").is_hidden()
        assert plain.problems == []
    finally:
        context.close()


def test_the_changed_view_lists_a_changed_parameter_with_its_default_and_not_an_unchanged_one(
    config_page,
):
    page = config_page
    save(page, "MaxRescheduling", "6")
    page.page.wait_for_selector("text=MaxRescheduling is now 6.")
    page.page.locator("#param-changed").check()
    changed = page.page.locator("#param-MaxRescheduling")
    assert changed.is_visible()
    assert "changed" in changed.locator(".p-value").inner_text()
    assert "default 3" in changed.locator(".p-default").inner_text()
    assert page.page.locator("#param-AccountingDays").is_hidden()
    assert page.page.locator(".param:visible[data-changed='0']").count() == 0
    assert "changed=1" in page.page.url
    page.screenshot("config-changed-view")


def test_reset_to_default_asks_first_restores_the_default_and_records_it_in_the_history(
    config_page,
):
    from core.models import ParameterValue
    from shares.models import User

    page = config_page
    save(page, "MaxRescheduling", "6")
    page.page.wait_for_selector("text=MaxRescheduling is now 6.")
    row = page.page.locator("#param-MaxRescheduling")
    row.locator("summary").click()
    row.locator("button", has_text="Reset to default").click()
    dialog = page.page.locator("#confirm-dialog")
    dialog.wait_for(state="visible")
    assert "Reset MaxRescheduling to its default, 3?" in dialog.inner_text()
    dialog.locator("button[value=cancel]").click()
    assert ParameterValue.objects.filter(name="MaxRescheduling").count() == 1
    row.locator("button", has_text="Reset to default").click()
    dialog.wait_for(state="visible")
    dialog.locator("button[value=yes]").click()
    page.page.wait_for_selector("text=MaxRescheduling is back to its default, 3.")
    gdpconfig.invalidate()
    assert gdpconfig.get("MaxRescheduling") == 3
    latest = ParameterValue.objects.filter(name="MaxRescheduling").order_by("-version").first()
    assert latest.version == 2 and latest.comment == "reset to default"
    assert latest.changed_by == User.objects.get(username="admin")
    row = page.page.locator("#param-MaxRescheduling")
    assert row.locator(".pvalue").inner_text() == "3"
    row.locator("summary").click()
    history = row.locator(".p-history table").inner_text()
    assert "reset to default" in history and "admin" in history


@pytest.mark.parametrize("width", [1280, 1600])
def test_the_page_is_compact_and_never_scrolls_sideways(page, transactional_db, width):
    demo.create_world()
    gdpconfig.set_value("MaxRescheduling", 6, comment="a history to open")
    page.page.set_viewport_size({"width": width, "height": HEIGHT})
    page.login("admin", demo.ADMIN_PASSWORD)
    page.goto("/config/")
    for summary in page.page.locator(".p-history summary").all():
        summary.click()
    sizes = page.page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth,"
        " document.body.scrollHeight, document.querySelectorAll('.param').length]"
    )
    scroll_width, client_width, height, rows = sizes
    assert scroll_width <= client_width, sizes
    # One row per parameter: the page used to take ~130 px a parameter (a card of forms each).
    assert height / rows < 70, sizes
