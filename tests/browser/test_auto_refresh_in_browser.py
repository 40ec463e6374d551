"""The monitoring pages' auto-refresh toggle: off by default, on it reloads the page every 30 s
while in view, and the choice stays with the page in this browser; pages that are not
monitoring views (a form) do not offer it."""

import pytest

from simulation import demo

pytestmark = pytest.mark.browser


def test_the_jobs_list_reloads_every_30_s_once_the_toggle_is_on(page):
    demo.create_world()
    page.page.clock.install()
    page.login("alice", demo.USER_PASSWORD)
    page.goto("/jobs/")
    box = page.page.locator("input[data-auto-refresh]")
    assert not box.is_checked()
    page.page.evaluate("window.loadedOnce = true")
    page.page.clock.run_for(31_000)
    assert page.page.evaluate("window.loadedOnce") is True  # off: no reload

    box.check()
    with page.page.expect_navigation():
        page.page.clock.run_for(31_000)
    assert page.page.locator("input[data-auto-refresh]").is_checked()  # kept after the reload

    page.page.locator("input[data-auto-refresh]").uncheck()
    page.goto("/jobs/")
    assert not page.page.locator("input[data-auto-refresh]").is_checked()


def test_a_form_page_offers_no_auto_refresh(page):
    demo.create_world()
    page.login("alice", demo.USER_PASSWORD)
    page.goto("/jobs/submit/")
    assert page.page.locator("input[data-auto-refresh]").count() == 0
    page.goto("/")
    assert page.page.locator("input[data-auto-refresh]").count() == 1
