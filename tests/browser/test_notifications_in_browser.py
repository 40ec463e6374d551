import pytest

from simulation import demo

pytestmark = pytest.mark.browser


def test_a_user_sets_a_default_and_asks_about_a_job_from_the_header(page):
    from matcher import services
    from notifications.models import NotificationPreference, NotificationRequest
    from shares.models import User

    demo.create_world()
    alice = User.objects.get(username="alice")
    [job] = services.submit_jobs(
        alice, [{"owner_group": alice.grid_groups.first(), "setup": "any", "cpu_time": 100}]
    )
    page.login("alice", demo.USER_PASSWORD)
    page.page.click('header .who a[href="/notifications/"]')
    page.page.wait_for_selector("#notify-default")
    page.page.check("#id_pref-email")
    page.page.select_option("#id_pref-outcomes", "failed")
    page.page.click("#notify-default button[type=submit]")
    page.page.wait_for_selector("text=Your notification default is saved.")
    pref = NotificationPreference.objects.get(user=alice)
    assert (pref.email, pref.outcomes) == (True, "failed")

    page.goto(f"/notifications/?job={job.pk}")
    assert page.page.input_value("#id_req-object_id") == str(job.pk)
    page.page.click("#notify-ask button[type=submit]")
    page.page.wait_for_selector(f'#notify-pending a[href="/jobs/{job.pk}/"]')
    assert NotificationRequest.objects.get(user=alice).job_id == job.pk
    page.screenshot("notifications")
