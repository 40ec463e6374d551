"""The accounting page in a browser: choose a window and a grouping with the page's own form,
the charts draw inside their cards, and the CSV downloads the rows shown."""

from datetime import timedelta

import pytest

from simulation import demo

pytestmark = pytest.mark.browser


def test_the_accounting_page_shows_a_week_by_site_and_exports_it(page, tmp_path):
    from accounting.models import AccountingBin
    from core import clock
    from shares.models import User

    demo.create_world()
    alice = User.objects.get(username="alice")
    hour = clock.now().replace(minute=0, second=0, microsecond=0)
    group = alice.grid_groups.get()
    for days, site in ((0, "LCG.CERN.ch"), (3, "LCG.PIC.es")):
        AccountingBin.objects.create(
            hour=hour - timedelta(days=days), group=group, user=alice, site=site,
            running_minutes=60, finished=2,
        )  # fmt: skip
    page.login("alice", demo.USER_PASSWORD)
    page.goto("/accounting/")
    assert page.page.locator("#accounting-totals tr[data-key]").count() == 1  # the last day
    page.page.select_option("#id_hours", "168")
    page.page.select_option("#id_group_by", "site")
    page.page.click("#accounting-form button[type=submit]")
    page.page.wait_for_selector('#accounting-totals tr[data-key="LCG.PIC.es"]')
    assert "hours=168" in page.page.url and "group_by=site" in page.page.url
    page.page.wait_for_selector(".js-plotly-plot .main-svg")
    for card in page.page.locator("section.card:has(.plotly-graph-div)").all():
        box, plot = card.bounding_box(), card.locator(".main-svg").first.bounding_box()
        assert (
            plot["x"] >= box["x"] - 1 and plot["x"] + plot["width"] <= box["x"] + box["width"] + 1
        )
    with page.page.expect_download() as download:
        page.page.click("#accounting-csv")
    saved = tmp_path / "accounting.csv"
    download.value.save_as(saved)
    lines = saved.read_text().splitlines()
    assert lines[0].startswith("hour,key,running") and len(lines) == 3
    assert page.problems == []
