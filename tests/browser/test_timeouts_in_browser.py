import pytest

from simulation import demo

pytestmark = pytest.mark.browser


@pytest.fixture
def timed_out(transactional_db):
    from brokerage.topology_import import import_topology
    from core import clock
    from matcher import services
    from matcher.models import Job, JobStatus
    from shares.models import GridGroup, User
    from simulation import panda_demo
    from timeouts.services import timeouts_cycle

    demo.create_world()
    import_topology(panda_demo.topology())
    alice = User.objects.get(username="alice")
    group = GridGroup.objects.filter(name="lhcb_user").first() or alice.grid_groups.first()
    spec = {"owner_group": group, "setup": "Production", "cpu_time": 1000}
    jobs = services.submit_jobs(alice, [dict(spec) for _ in range(3)])
    now = clock.now()
    # One job sent 40 minutes ago (times out now), one running whose heartbeat is 90 min old.
    Job.objects.filter(pk=jobs[0].pk).update(
        status=JobStatus.SENT, site="LCG.CERN.ch", status_changed=now.replace(microsecond=0)
    )
    Job.objects.filter(pk=jobs[1].pk).update(
        status=JobStatus.RUNNING, site="LCG.PIC.es", status_changed=now, heartbeat=now
    )
    clock.advance(40 * 60)
    timeouts_cycle()
    clock.reset()
    return jobs


def test_the_timeouts_page_draws_its_two_charts_and_links_each_action_to_its_job(page, timed_out):
    page.login("admin", demo.ADMIN_PASSWORD)
    response = page.goto("/brokerage/timeouts/")
    assert response.status == 200
    page.page.wait_for_selector("#time-left-chart .js-plotly-plot .main-svg")
    page.page.wait_for_selector("#actions-chart .js-plotly-plot .main-svg")
    assert page.page.locator("#time-left-chart .bars path").count() >= 1
    assert page.page.locator("#actions-chart .bars path").count() >= 1
    link = page.page.locator(f'#timeout-actions a[href="/jobs/{timed_out[0].pk}/"]')
    assert link.count() == 1
    page.screenshot("timeouts")
    link.click()
    page.page.wait_for_selector("text=Status history")
    assert "TIMEOUT_sent" in page.page.content()
