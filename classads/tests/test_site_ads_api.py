"""Advertising site ads and submitting job ads through the API: the UpdateSequenceNumber rule,
unparsable ads, who may do what."""

import pytest
from django.contrib.auth.models import Permission

from classads import semantics
from classads.models import JobAd, SiteAd
from classads.tests.conftest import SEED_DAG_SUBMIT, site_ad_text

pytestmark = pytest.mark.django_db


def test_the_seeds_site_ad_is_stored_under_its_name_in_old_syntax(seed_site):
    assert seed_site["name"] == "uw-hep-USCMS-Site"
    assert seed_site["sequence"] == 1057960761
    assert seed_site["cur_matches"] == 0
    assert seed_site["max_matches"] == 2
    assert seed_site["want_ad_revaluate"] is True
    assert seed_site["attributes"]["MatchmakerURL"] == '"ramen.fnal.gov:/jobmanager-condor"'


def test_the_new_syntax_is_accepted_too(advertise):
    response = advertise('[Name = "new-site"; Requirements = true; UpdateSequenceNumber = 5]')
    assert response.status_code == 201, response.data
    assert SiteAd.objects.get(name="new-site").sequence == 5


def test_an_update_with_a_higher_sequence_number_replaces_the_ad(advertise):
    advertise(site_ad_text("s1", seq=10, max_matches=2))
    response = advertise(site_ad_text("s1", seq=11, max_matches=9))
    assert response.status_code == 200
    assert response.data["created"] is False and response.data["ignored"] is False
    assert SiteAd.objects.get(name="s1").max_matches == 9
    assert SiteAd.objects.count() == 1


@pytest.mark.parametrize("seq", [10, 9])
def test_a_stale_update_sequence_number_is_ignored(advertise, seq):
    advertise(site_ad_text("s1", seq=10, max_matches=2))
    response = advertise(site_ad_text("s1", seq=seq, max_matches=9))
    assert response.status_code == 200
    assert response.data["ignored"] is True
    assert "not higher" in response.data["reason"]
    stored = SiteAd.objects.get(name="s1")
    assert stored.max_matches == 2 and stored.sequence == 10


@pytest.mark.parametrize(
    "text, field, words",
    [
        ('Name = "x"\nRequirements = (CurMatches <', "Requirements", "not a valid ClassAd"),
        ('Name = "x"\nthis is not an attribute', "ad", "line 2"),
        ('[Name = "x"; Requirements = (]', "ad", "Unable to parse"),
        ('[Name = "x"; Requirements = true] trailing', "ad", "outside"),
        ("Requirements = true", "Name", "unique Name"),
        (
            'Name = "x"\nRequirements = true\nUpdateSequenceNumber = "soon"',
            "UpdateSequenceNumber",
            "integer",
        ),
    ],
)
def test_an_unparsable_ad_answers_400_with_the_parsers_message_and_stores_nothing(
    advertise, text, field, words
):
    response = advertise(text)
    assert response.status_code == 400
    [message] = response.data["ad"]
    assert message.startswith(f"{field}: ")
    assert words in message
    assert not SiteAd.objects.exists()


def test_only_staff_or_advertisers_may_advertise_and_everyone_logged_in_reads(
    advertise, users, api
):
    assert advertise(semantics.SEED_SITE_AD, user="alice").status_code == 403
    assert api().get("/api/v1/classads/sites/").status_code in (401, 403)
    assert not SiteAd.objects.exists()
    alice = users["alice"]
    alice.user_permissions.add(Permission.objects.get(codename="advertise_sitead"))
    alice = type(alice).objects.get(pk=alice.pk)  # drop the permission cache
    users["alice"] = alice
    assert advertise(semantics.SEED_SITE_AD, user="alice").status_code == 201
    listed = api(users["bob"]).get("/api/v1/classads/sites/")
    assert listed.status_code == 200
    assert [r["name"] for r in listed.data["results"]] == ["uw-hep-USCMS-Site"]
    site_id = listed.data["results"][0]["id"]
    assert api(users["bob"]).delete(f"/api/v1/classads/sites/{site_id}/").status_code == 403
    assert api(users["admin"]).delete(f"/api/v1/classads/sites/{site_id}/").status_code == 204


def test_a_bad_job_ad_answers_400_naming_the_attribute_and_stores_nothing(submit_ad):
    response = submit_ad("+WANT_USCMS_MATCHMAKER = True\nRequirements = Is_USCMS_Site =?=")
    assert response.status_code == 400
    assert response.data["ad"][0].startswith("Requirements: not a valid ClassAd expression")
    response = submit_ad("[Requirements = true; MATCH_Foo = 1]")
    assert response.status_code == 400 and "MATCH_Foo" in response.data["ad"][0]
    response = submit_ad(SEED_DAG_SUBMIT, colour="blue")
    assert response.status_code == 400 and "colour" in response.data
    response = submit_ad(SEED_DAG_SUBMIT, owner_group="lhcb_data")  # carol is not a member
    assert response.status_code == 400 and "owner_group" in response.data
    response = submit_ad(SEED_DAG_SUBMIT, nodes=[{"name": "a", "cpu_time": "long"}])
    assert response.status_code == 400 and "nodes" in response.data
    assert not JobAd.objects.exists()


def test_a_submitted_ad_gets_rank_zero_owner_and_group(submit_ad):
    response = submit_ad("+WANT_USCMS_MATCHMAKER = True\nRequirements = Is_USCMS_Site =?= True")
    assert response.status_code == 201, response.data
    text = response.data["text"]
    assert "Rank = 0.0" in text
    assert 'Owner = "carol"' in text and 'AcctGroup = "lhcb_mc"' in text
    assert response.data["is_dag"] is False and len(response.data["nodes"]) == 1


def test_users_see_and_act_on_their_own_job_ads_only(submit_ad, users, api):
    ad_id = submit_ad(SEED_DAG_SUBMIT, user="alice", owner_group="lhcb_user").data["id"]
    assert api(users["bob"]).get(f"/api/v1/classads/jobs/{ad_id}/").status_code == 404
    assert api(users["bob"]).post(f"/api/v1/classads/jobs/{ad_id}/remove/").status_code == 404
    assert api(users["admin"]).get(f"/api/v1/classads/jobs/{ad_id}/").status_code == 200
    listed = api(users["alice"]).get("/api/v1/classads/jobs/")
    assert [r["id"] for r in listed.data["results"]] == [ad_id]
    removed = api(users["alice"]).post(f"/api/v1/classads/jobs/{ad_id}/remove/")
    assert removed.status_code == 200 and removed.data["status"] == "removed"
    again = api(users["alice"]).post(f"/api/v1/classads/jobs/{ad_id}/remove/")
    assert again.status_code == 409


def test_the_analysis_names_the_failing_clause_of_each_side_and_the_rank(
    seed_site, advertise, submit_ad, users, api
):
    advertise(site_ad_text("full", cur=3, max_matches=3))
    ad_id = submit_ad(SEED_DAG_SUBMIT.replace("/MaxMatches", "/real(MaxMatches)")).data["id"]
    rows = api(users["carol"]).get(f"/api/v1/classads/jobs/{ad_id}/analysis/").data
    by_name = {r["site_ad"]: r for r in rows}
    assert by_name["uw-hep-USCMS-Site"]["matches"] is True
    assert by_name["uw-hep-USCMS-Site"]["best"] is True
    assert by_name["full"]["matches"] is False
    assert by_name["full"]["site_failing"] == ["CurMatches < MaxMatches"]
    assert by_name["full"]["job_failing"] == []
    assert by_name["full"]["rank"] == -1.0
