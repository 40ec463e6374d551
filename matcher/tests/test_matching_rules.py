import pytest

from matcher.matching import TQ, Resource, first_failing_rule, is_any

BASE_TQ = dict(
    id=1,
    owner_id=10,
    owner_group_id=20,
    job_sharing=False,
    setup="Prod",
    cpu_time=5000,
    priority=1.0,
)
BASE_RES = dict(site="LCG.CERN.ch", grid_ce="ce1", setup="Prod", cpu_time=5000)


def tq(**kw):
    d = dict(BASE_TQ)
    d.update({k: frozenset(v) if isinstance(v, (list, set)) else v for k, v in kw.items()})
    return TQ(**d)


def res(**kw):
    d = dict(BASE_RES)
    d.update({k: frozenset(v) if isinstance(v, (list, set)) else v for k, v in kw.items()})
    return Resource(**d)


def rule(t, r):
    failed = first_failing_rule(t, r)
    return failed[0] if failed else None


@pytest.mark.parametrize("value", ["any", "ANY", "Any", ["x", "any"]])
def test_any_in_any_case_is_a_wildcard(value):
    assert is_any(value)


def test_an_unrestricted_taskqueue_matches_a_plain_resource():
    assert rule(tq(), res()) is None


def test_private_pilot_takes_only_its_group():
    assert rule(tq(), res(private=True, owner_id=10, owner_group_id=20)) is None
    assert rule(tq(), res(private=True, owner_id=10, owner_group_id=21)) == "OwnerGroup"


def test_private_pilot_needs_its_owner_unless_the_group_has_jobsharing():
    assert rule(tq(), res(private=True, owner_id=11, owner_group_id=20)) == "OwnerDN"
    assert rule(tq(job_sharing=True), res(private=True, owner_id=11, owner_group_id=20)) is None


def test_a_pilot_naming_only_a_group_takes_any_owner_of_it():
    assert rule(tq(), res(private=True, owner_id=None, owner_group_id=20)) is None


def test_a_generic_pilot_ignores_owners():
    assert rule(tq(owner_id=99, owner_group_id=98), res()) is None


def test_setup_must_match_unless_any():
    assert rule(tq(), res(setup="Cert")) == "Setup"
    assert rule(tq(), res(setup="any")) is None


@pytest.mark.parametrize(("cpu", "expected"), [(4999, "CPUTime"), (5000, None), (86400, None)])
def test_the_cpu_segment_must_not_exceed_the_resource_cpu_time(cpu, expected):
    assert rule(tq(cpu_time=5000), res(cpu_time=cpu)) == expected


def test_pilot_type_must_be_accepted_by_the_taskqueue():
    private_only = tq(pilot_types=["private"])
    mine = dict(private=True, owner_id=10, owner_group_id=20)
    assert rule(private_only, res(pilot_type="private", **mine)) is None
    assert rule(private_only, res(pilot_type="generic", **mine)) == "PilotType"
    assert rule(private_only, res(pilot_type=None, **mine)) == "PilotType"
    assert rule(private_only, res(pilot_type="Any", **mine)) is None
    assert rule(tq(pilot_types=["sam"]), res(pilot_type="sam")) is None
    assert rule(tq(), res(pilot_type="generic")) is None


def test_a_generic_pilot_never_takes_a_private_only_taskqueue_even_with_any():
    private_only = tq(pilot_types=["private"])
    assert rule(private_only, res(pilot_type="private")) == "PilotType"
    assert rule(private_only, res(pilot_type="any")) == "PilotType"


def test_site_must_be_accepted_and_an_empty_sites_list_accepts_any():
    assert rule(tq(sites=["LCG.CERN.ch", "LCG.PIC.es"]), res()) is None
    assert rule(tq(sites=["LCG.PIC.es"]), res()) == "Site"
    assert rule(tq(sites=["LCG.PIC.es"]), res(site="any")) is None
    assert rule(tq(sites=[]), res(site="LCG.Anywhere.xx")) is None


def test_a_banned_site_is_refused():
    assert rule(tq(banned_sites=["LCG.CERN.ch"]), res()) == "BannedSite"
    assert rule(tq(banned_sites=["LCG.PIC.es"]), res()) is None


def test_a_required_grid_ce_must_match():
    assert rule(tq(grid_ces=["ce1", "ce2"]), res()) is None
    assert rule(tq(grid_ces=["ce2"]), res()) == "GridCE"
    assert rule(tq(grid_ces=["ce2"]), res(grid_ce=None)) == "GridCE"
    assert rule(tq(grid_ces=["ce2"]), res(grid_ce="any")) is None


def test_a_required_platform_must_be_offered():
    assert rule(tq(platforms=["el9"]), res(platforms=["el9", "el8"])) is None
    assert rule(tq(platforms=["el9"]), res(platforms=["el8"])) == "Platform"
    assert rule(tq(platforms=["el9"]), res(platforms=[])) == "Platform"
    assert rule(tq(platforms=["el9"]), res(platforms=["ANY"])) is None


def test_the_resource_must_offer_every_tag_the_taskqueue_requires():
    needs = tq(tags=["GPU", "16GB"])
    assert rule(needs, res(tags=["GPU", "16GB", "MultiProcessor"])) is None
    assert rule(needs, res(tags=["GPU"])) == "Tag"
    assert rule(needs, res(tags=[])) == "Tag"
    assert rule(needs, res(tags=["any"])) is None
    assert rule(tq(), res(tags=["GPU"])) is None  # offering more is fine


def test_the_first_failing_rule_is_reported_in_the_seeds_order():
    t = tq(setup="Cert", sites=["X"], tags=["GPU"])
    assert rule(t, res(cpu_time=1)) == "Setup"
    assert "resource CPU time 1 s" in first_failing_rule(tq(), res(cpu_time=1))[1]
