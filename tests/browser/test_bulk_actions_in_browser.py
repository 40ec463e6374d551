"""Bulk kill from the jobs list in a browser: tick three of one's jobs, the confirmation states
the count, the three are killed, and a fourth id slipped into the form (another user's job) is
refused by name."""

import pytest

from simulation import demo

pytestmark = pytest.mark.browser


def test_a_user_bulk_kills_three_jobs_and_is_refused_another_users(page):
    from core import gdpconfig
    from matcher import services
    from matcher.models import Job
    from shares.models import User

    demo.create_world()
    setup = gdpconfig.get("DefaultSetup")

    def submit(name):
        user = User.objects.get(username=name)
        spec = {"owner_group": user.grid_groups.first(), "setup": setup, "cpu_time": 100}
        return services.submit_jobs(user, [spec])[0]

    mine = [submit("alice") for _ in range(4)]
    bobs = submit("bob")
    page.login("alice", demo.USER_PASSWORD)
    page.goto("/jobs/?status=activated")
    for job in mine[:3]:
        page.page.check(f'#bulk-form input[name="job"][value="{job.pk}"]')
    # A crafted request: another user's job id in the form (the list never shows it).
    page.page.evaluate(
        """id => { const box = document.createElement('input'); box.type = 'checkbox';
        box.name = 'job'; box.value = id; box.checked = true;
        document.getElementById('bulk-form').appendChild(box); }""",
        str(bobs.pk),
    )
    page.page.select_option('#bulk-form select[name="action"]', "kill")
    page.page.click("#bulk-form button[type=submit]")
    page.page.wait_for_selector("text=Kill 4 jobs?")
    page.page.click("form button.danger")
    page.page.wait_for_selector(".msg.success")
    assert "3 jobs killed" in page.page.text_content(".msg.success")
    assert f"{bobs.pk}: not a job you may act on" in page.page.text_content(".msg.error")
    assert "status=activated" in page.page.url
    status = dict(Job.objects.values_list("pk", "status"))
    assert [status[j.pk] for j in mine] == ["cancelled"] * 3 + ["activated"]
    assert status[bobs.pk] == "activated"
