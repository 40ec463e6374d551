"""Ads are stored as advertised or not at all: a value the columns cannot hold (a Name over 255
characters, an UpdateSequenceNumber past 64 bits, counts past 32) or that ClassAds cannot read
as written (an integer past 64 bits) answers 400 naming the attribute, and nothing changes."""

import pytest

from classads import services
from classads.models import JobAd, SiteAd
from classads.tests.conftest import SEED_DAG_SUBMIT, site_ad_text
from core.cycles import run_cycle

pytestmark = pytest.mark.django_db

TOO_BIG = "99999999999999999999"  # > 2^64


def refused(response, field: str) -> str:
    assert response.status_code == 400, response.data
    [message] = response.data["ad"]
    assert message.startswith(f"{field}: "), message
    return message


def test_a_name_longer_than_255_characters_is_refused_and_leaves_the_other_site_alone(advertise):
    first, site = "s" * 255, 'GridSite = "LCG.Long.xx"\n'  # the DIRAC site: short
    assert advertise(site_ad_text(first, seq=1, max_matches=2, extra=site)).status_code == 201
    # Cut to 255 characters, this Name would be the first site's: it replaced that ad.
    second = site_ad_text(first + "x", seq=2, max_matches=9, extra=site)
    message = refused(advertise(second), "Name")
    assert "255" in message
    stored = SiteAd.objects.get()
    assert (stored.name, stored.sequence, stored.max_matches) == (first, 1, 2)


@pytest.mark.parametrize(
    "text",
    [
        site_ad_text("s1", seq=TOO_BIG),
        f'[Name = "s1"; Requirements = true; UpdateSequenceNumber = {TOO_BIG}]',
        site_ad_text("s1", seq=2**63 - 1),  # fits the column, leaves no room to go higher
        site_ad_text("s1", seq=-5),
    ],
    ids=["old-syntax-overflow", "new-syntax-overflow", "int64-max", "negative"],
)
def test_an_update_sequence_number_out_of_range_is_refused_naming_it(advertise, text):
    refused(advertise(text), "UpdateSequenceNumber")
    assert not SiteAd.objects.exists()


def test_an_overflowing_sequence_number_does_not_replace_a_stored_ad(advertise):
    assert advertise(site_ad_text("s1", seq=10, max_matches=2)).status_code == 201
    refused(advertise(site_ad_text("s1", seq=TOO_BIG, max_matches=9)), "UpdateSequenceNumber")
    stored = SiteAd.objects.get()
    assert (stored.sequence, stored.max_matches) == (10, 2)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (f"Memory = {TOO_BIG}\n", "Memory"),
        ("Memory = 1.5e300\n", None),  # a real: read as written
        (f'Note = "{TOO_BIG}"\n', None),  # a string
        (f'GridSite = "{"g" * 129}"\n', "GridSite"),  # the DIRAC site its nodes go to
    ],
)
def test_any_attribute_is_stored_as_written_or_refused_naming_it(advertise, extra, field):
    response = advertise(site_ad_text("s1", extra=extra))
    if field is None:
        assert response.status_code == 201, response.data
    else:
        refused(response, field)
        assert not SiteAd.objects.exists()


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (site_ad_text("s1", max_matches=3_000_000_000), "MaxMatches"),
        (site_ad_text("s1", cur=-1), "CurMatches"),
        ('[Name = "s1"; Requirements = true; MaxMatches = 2000000000 * 2]', "MaxMatches"),
    ],
)
def test_match_counts_out_of_range_are_refused_naming_them(advertise, text, field):
    assert "10^9" in refused(advertise(text), field)
    assert not SiteAd.objects.exists()


def test_the_monitor_readvertises_an_ad_at_the_top_of_the_sequence_range(advertise):
    assert advertise(site_ad_text("s1", seq=10**18)).status_code == 201
    run = run_cycle("matchmaker_monitor")
    assert run.counts["site_ads"] == 1
    assert SiteAd.objects.get().sequence == 10**18 + 1
    # A site itself may not go there.
    refused(advertise(site_ad_text("s1", seq=10**18 + 2)), "UpdateSequenceNumber")
    assert services.advertise(site_ad_text("s1", seq=10**18 + 2), source="monitor").site_ad


def test_a_job_ads_integer_past_64_bits_is_refused_naming_the_attribute(submit_ad):
    refused(submit_ad(f"+Budget = {TOO_BIG}\nRequirements = true"), "Budget")
    refused(submit_ad(f"[Requirements = true; Budget = {TOO_BIG}]"), "Budget")
    assert not JobAd.objects.exists()


def test_a_dag_node_whose_job_name_would_be_cut_is_refused_naming_it(submit_ad):
    nodes = [{"name": "ok"}, {"name": "n" * 64}]
    response = submit_ad(SEED_DAG_SUBMIT, name="d" * 100, nodes=nodes)
    assert response.status_code == 400, response.data
    assert response.data["nodes"][0] == {} and "name" in response.data["nodes"][1]
    assert not JobAd.objects.exists()
    response = submit_ad(SEED_DAG_SUBMIT, name="d" * 60, nodes=nodes)
    assert response.status_code == 201, response.data
