import pytest

from simulation import demo

pytestmark = pytest.mark.browser


@pytest.fixture
def matchmaking(transactional_db):
    from classads import semantics, services
    from classads.ads import parse_job_ad
    from core.cycles import run_cycle
    from shares.models import GridGroup, User

    demo.create_world()
    services.advertise(semantics.SEED_SITE_AD)
    carol = User.objects.get(username="carol")
    group = GridGroup.objects.get(name="lhcb_mc")
    ad = parse_job_ad(
        "+WANT_USCMS_MATCHMAKER = True\nRequirements = Is_USCMS_Site =?= True\n"
        "Rank = -CurMatches/real(MaxMatches)\nGlobusScheduler = $$(MatchmakerURL)"
    )
    spec = {
        "ad": ad,
        "owner_group": group,
        "setup": "LHCb-Production",
        "name": "group.dag",
        "is_dag": True,
        "nodes": [{"name": "stage-in", "cpu_time": 600}, {"name": "run", "cpu_time": 3600}],
    }
    [dag] = services.submit_job_ads(carol, [spec])
    run_cycle("negotiator")
    run_cycle("matchmaker_monitor")
    return dag


def test_a_user_follows_a_dag_from_its_site_ad_to_its_analysis(page, matchmaking):
    from classads.models import SiteAd

    page.login("carol", demo.USER_PASSWORD)
    page.goto("/classads/")
    page.page.click("text=uw-hep-USCMS-Site")
    page.page.wait_for_selector("#site-ad-chart .js-plotly-plot .main-svg")
    assert page.page.locator("#attributes").inner_text().count("MatchmakerURL") == 1
    page.screenshot("classads-site-ad")
    page.goto(f"/classads/jobs/{matchmaking.pk}/")
    assert "MATCH_EXP_GlobusScheduler" in page.page.locator("#match-attrs").inner_text()
    assert "matches (best)" in page.page.locator("#analysis").inner_text()
    page.screenshot("classads-job-ad")
    page.page.click("text=Negotiation cycles")
    page.page.wait_for_selector("#negotiation-chart .js-plotly-plot .main-svg")
    page.screenshot("classads-negotiation")
    assert SiteAd.objects.get().cur_matches == 1
