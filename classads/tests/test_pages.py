"""The ClassAd pages: login required, the charts drawn, the analysis shown, staff-free reads."""

import pytest
from django.test import Client

from classads.models import JobAd, JobAdNode
from classads.tests.conftest import SEED_DAG_SUBMIT, SEED_NODES, site_ad_text
from core.cycles import run_cycle

pytestmark = pytest.mark.django_db


def client_for(user):
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def matched(seed_site, advertise, submit_ad):
    advertise(site_ad_text("other-site", cur=5, max_matches=5))
    dag = submit_ad(SEED_DAG_SUBMIT, name="group.dag", nodes=SEED_NODES).data["id"]
    held = submit_ad(
        "+WANT_USCMS_MATCHMAKER = True\nRequirements = Is_USCMS_Site =?= True\n"
        "GlobusScheduler = $$(GatekeeperURL)",
        name="held",
    ).data["id"]
    run_cycle("negotiator")
    return {"dag": dag, "held": held, "site": seed_site["id"]}


def test_anonymous_visitors_are_sent_to_the_login_page():
    response = Client().get("/classads/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_every_classad_page_renders_for_a_user(matched, users):
    c = client_for(users["carol"])
    for path in [
        "/classads/",
        "/classads/jobs/",
        "/classads/negotiation/",
        f"/classads/sites/{matched['site']}/",
        f"/classads/jobs/{matched['dag']}/",
    ]:
        response = c.get(path)
        assert response.status_code == 200, path
    site_page = c.get(f"/classads/sites/{matched['site']}/").content.decode()
    assert "site-ad-chart" in site_page and "MatchmakerURL" in site_page
    assert "negotiation-chart" in c.get("/classads/negotiation/").content.decode()


def test_the_job_ad_page_shows_the_failing_clause_and_the_match(matched, users):
    page = client_for(users["carol"]).get(f"/classads/jobs/{matched['dag']}/").content.decode()
    assert "MATCH_EXP_GlobusScheduler" in page
    assert "CurMatches &lt; MaxMatches</code> → false" in page  # the full other-site
    held = client_for(users["carol"]).get(f"/classads/jobs/{matched['held']}/").content.decode()
    assert "Cannot expand $$ expression (GatekeeperURL)." in held


def test_the_matcher_job_page_links_to_its_classad(matched, users):
    node = JobAdNode.objects.filter(job_ad_id=matched["dag"]).first()
    page = client_for(users["carol"]).get(f"/jobs/{node.job_id}/").content.decode()
    assert f"/classads/jobs/{matched['dag']}/" in page


def test_others_cannot_see_or_release_a_users_job_ad(matched, users):
    bob = client_for(users["bob"])
    assert bob.get(f"/classads/jobs/{matched['dag']}/").status_code == 404
    assert bob.post(f"/classads/jobs/{matched['held']}/release/").status_code == 404
    carol = client_for(users["carol"])
    assert carol.post(f"/classads/jobs/{matched['held']}/release/").status_code == 302
    assert JobAd.objects.get(pk=matched["held"]).status == "idle"
