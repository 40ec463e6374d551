"""The negotiation cycle agrees with HTCondor's own ClassAd library (classad2, the oracle) where
its shortcuts used to differ: Requirements cut into clauses against the precedence of `||` and
`?:`, clauses that had to be exactly true (HTCondor takes a non-zero number too), old-syntax
strings, and the `$$()` text HTCondor reads as a macro. Ads go in through the API as a site or
a user sends them; the cycle runs as the scheduler runs it."""

import pytest
from classad2 import ClassAd, ExprTree, Parser, parseOne

from classads import ads
from classads.models import JobAd, SiteAd
from classads.tests.conftest import site_ad_text
from core.cycles import run_cycle

pytestmark = pytest.mark.django_db

USCMS_JOB = "+WANT_USCMS_MATCHMAKER = True\nRequirements = Is_USCMS_Site =?= True\n"
# A site that takes urgent jobs even when full, as a site administrator writes it.
URGENT_SITE_REQUIREMENTS = (
    "CurMatches < MaxMatches && TARGET.Urgent =!= true || TARGET.Urgent =?= true"
)


def negotiate():
    run = run_cycle("negotiator")
    assert run.status == "success", run.error
    return run.counts


def advertised(advertise, text):
    response = advertise(text)
    assert response.status_code == 201, response.data
    return response.data["site_ad"]


def submitted(submit_ad, ad):
    response = submit_ad(ad)
    assert response.status_code == 201, response.data
    return response.data["id"]


def outcome(job_ad_id):
    ad = JobAd.objects.get(pk=job_ad_id)
    return ad.status, ad.site_ad_name


def analysis(api, users, job_ad_id, site_name):
    response = api(users["carol"]).get(f"/api/v1/classads/jobs/{job_ad_id}/analysis/")
    assert response.status_code == 200
    [row] = [r for r in response.data if r["site_ad"] == site_name]
    return row


def oracle_matches(site_text, job_text):
    """HTCondor's own answer: both ads parsed by classad2, its symmetric match."""
    site = parseOne(site_text, Parser.Old if not site_text.lstrip().startswith("[") else Parser.New)
    return site.symmetricMatch(ads.parse_job_ad(job_text))


# --- Requirements: `&&` binds more tightly than `||` and `?:` ------------------------------------


def test_a_site_requirements_with_a_top_level_or_matches_as_htcondor_reads_it(
    advertise, submit_ad, api, users
):
    site = '[Name = "s"; Requirements = false && false || true]'
    advertised(advertise, site)
    job = submitted(submit_ad, "[Requirements = true]")
    assert oracle_matches(site, "[Requirements = true]") is True
    row = analysis(api, users, job, "s")
    assert row["matches"] is True
    assert row["site_failing"] == []  # one clause, whole: `(false && false) || true`
    assert negotiate()["matches"] == 1
    assert outcome(job) == ("matched", "s")


def test_a_full_site_that_takes_urgent_jobs_matches_the_urgent_one_only(
    advertise, submit_ad, api, users
):
    site = site_ad_text("urgent-ok", cur=2, max_matches=2).replace(
        "Requirements = (CurMatches < MaxMatches) && (TARGET.WANT_USCMS_MATCHMAKER =?= TRUE)",
        f"Requirements = {URGENT_SITE_REQUIREMENTS}",
    )
    assert URGENT_SITE_REQUIREMENTS in site
    advertised(advertise, site)
    normal_text = USCMS_JOB
    urgent_text = USCMS_JOB + "+Urgent = true\n"
    normal = submitted(submit_ad, normal_text)
    urgent = submitted(submit_ad, urgent_text)
    assert oracle_matches(site, urgent_text) is True
    assert oracle_matches(site, normal_text) is False
    assert analysis(api, users, urgent, "urgent-ok")["site_failing"] == []

    assert negotiate()["matches"] == 1
    assert outcome(urgent) == ("matched", "urgent-ok")
    assert outcome(normal) == ("idle", "")


def test_a_conditional_requirements_is_not_cut_at_an_and_inside_it(advertise, submit_ad):
    # `?:` binds more loosely than `&&`: this is `(false && false) ? false : true`.
    site = '[Name = "s"; Requirements = false && false ? false : true]'
    advertised(advertise, site)
    job = submitted(submit_ad, "[Requirements = true]")
    assert oracle_matches(site, "[Requirements = true]") is True
    negotiate()
    assert outcome(job) == ("matched", "s")


def test_clauses_are_split_only_where_and_is_the_top_level_operator():
    assert ads.split_conjuncts("a && b || c") == ["a && b || c"]
    assert ads.split_conjuncts("(a && b || c)") == ["a && b || c"]
    assert ads.split_conjuncts("a && b ? c : d") == ["a && b ? c : d"]
    assert ads.split_conjuncts("a && (b || c) && d") == ["a", "b || c", "d"]
    assert ads.split_conjuncts("'odd || name' && b") == ["'odd || name'", "b"]
    assert ads.split_conjuncts("a =?= true && b =!= 1") == ["a =?= true", "b =!= 1"]


# --- a Requirements holds when HTCondor's EvalBool says so: non-zero numbers too ---------------


def test_a_site_whose_requirements_is_a_non_zero_number_matches(advertise, submit_ad):
    site = '[Name = "s"; Requirements = 1]'
    advertised(advertise, site)
    job = submitted(submit_ad, "[Requirements = true]")
    assert oracle_matches(site, "[Requirements = true]") is True
    negotiate()
    assert outcome(job) == ("matched", "s")


def test_a_job_whose_requirements_is_a_non_zero_number_matches(advertise, submit_ad):
    advertised(advertise, '[Name = "s"; Requirements = true]')
    job = submitted(submit_ad, "[Requirements = 2.5]")
    zero = submitted(submit_ad, '[Requirements = 0; Name = "never"]')
    assert oracle_matches('[Name = "s"; Requirements = true]', "[Requirements = 2.5]") is True
    assert oracle_matches('[Name = "s"; Requirements = true]', "[Requirements = 0]") is False
    negotiate()
    assert outcome(job) == ("matched", "s")
    assert outcome(zero) == ("idle", "")


def test_a_site_counting_its_free_slots_as_a_number_takes_jobs_until_none_are_left(
    advertise, submit_ad, api, users
):
    site = site_ad_text("slots", max_matches=1).replace(
        "Requirements = (CurMatches < MaxMatches)", "Requirements = (MaxMatches - CurMatches)"
    )
    assert "(MaxMatches - CurMatches) &&" in site
    advertised(advertise, site)
    first = submitted(submit_ad, USCMS_JOB)
    second = submitted(submit_ad, USCMS_JOB)
    assert oracle_matches(site, USCMS_JOB) is True  # 1 free slot: true
    full = parseOne(site, Parser.Old)
    full["CurMatches"] = 1
    assert full.symmetricMatch(ads.parse_job_ad(USCMS_JOB)) is False  # 0 free slots: false
    row = analysis(api, users, first, "slots")
    assert row["site_clauses"][0] == {
        "clause": "MaxMatches - CurMatches",
        "value": "1",
        "passes": True,
    }

    assert negotiate()["matches"] == 1
    assert outcome(first) == ("matched", "slots")
    assert outcome(second) == ("idle", "")
    assert SiteAd.objects.get(name="slots").cur_matches == 1


# --- old syntax: a backslash is literal, only `\"` is special -----------------------------------


def test_a_backslash_in_an_old_syntax_site_ad_is_literal(advertise, submit_ad):
    site = site_ad_text("win", extra='Path = "C:\\tmp"\nWorkDir = "C:\\grid\\new"\n')
    stored = advertised(advertise, site)
    oracle = parseOne(site, Parser.Old)
    assert oracle["Path"] == "C:\\tmp" and len(oracle["Path"]) == 6
    ad = ClassAd(SiteAd.objects.get(name="win").text)
    assert ad["Path"] == oracle["Path"]
    assert ad["WorkDir"] == oracle["WorkDir"] == "C:\\grid\\new"
    assert stored["attributes"]["Path"] == '"C:\\\\tmp"'

    job_text = (
        USCMS_JOB + 'Requirements = TARGET.WorkDir == "C:\\\\grid\\\\new"\n'
        "remote_initialdir = $$(WorkDir)\n"
    )
    assert oracle_matches(site, job_text) is True
    job = submitted(submit_ad, job_text)
    negotiate()
    assert outcome(job) == ("matched", "win")
    expanded = JobAd.objects.get(pk=job).match_attrs["MATCH_EXP_RemoteIwd"]
    assert ExprTree(expanded).eval() == "C:\\grid\\new"


def test_old_syntax_escapes_convert_as_htcondors_old_parser_reads_them():
    for value in [
        '"C:\\tmp"',
        '"C:\\"',  # a backslash before the closing quote is literal
        '"say \\"hi\\"" + "x"',  # an escaped quote inside the string
        '"x\\\\y"',  # two backslashes stay two
        'regexp("\\d+", "12")',
    ]:
        ours = ads.parse_old(f"X = {value}")
        assert ours.eval("X") == parseOne(f"X = {value}", Parser.Old).eval("X"), value


# --- `$$(Name:default)`: only a default of HTCondor's characters is a macro ---------------------


def test_a_default_with_characters_htcondor_does_not_allow_is_left_as_written(advertise, submit_ad):
    advertised(advertise, site_ad_text("plain", max_matches=10))
    url = submitted(
        submit_ad,
        USCMS_JOB + "GlobusScheduler = $$(GatekeeperURL:gk-1.example.org:2119/jobmanager-pbs)",
    )
    paren = submitted(submit_ad, USCMS_JOB + '+Queue = "$$(Name:x(y))"')
    allowed = submitted(submit_ad, USCMS_JOB + '+Scratch = "$$(ScratchDir:/data/grid_1, $HOME)"')
    assert negotiate()["held"] == 0

    ad = JobAd.objects.get(pk=url)
    assert ad.status == "matched"
    assert ad.match_attrs["MATCH_EXP_GlobusScheduler"] == (
        '"$$(GatekeeperURL:gk-1.example.org:2119/jobmanager-pbs)"'
    )
    assert "MATCH_GatekeeperURL" not in ad.match_attrs
    ad = JobAd.objects.get(pk=paren)
    assert ad.status == "matched"
    assert ad.match_attrs["MATCH_EXP_Queue"] == '"$$(Name:x(y))"'  # no stray `)`
    ad = JobAd.objects.get(pk=allowed)
    assert ad.match_attrs["MATCH_ScratchDir"] == "/data/grid_1, $HOME"
    assert ad.match_attrs["MATCH_EXP_Scratch"] == '"/data/grid_1, $HOME"'


# --- `$$([expr])` ends at the first `])`, quotes or not -----------------------------------------


def test_a_bracket_inside_a_string_of_a_dollar_dollar_expression_does_not_end_it(
    advertise, submit_ad
):
    site = site_ad_text("s")
    advertised(advertise, site)
    closing = submitted(submit_ad, USCMS_JOB + 'Where = $$([strcat("]", Name)])')
    label = submitted(submit_ad, USCMS_JOB + 'Label = $$([strcat("[", GridSite)])')
    assert negotiate()["held"] == 0

    oracle = parseOne(site, Parser.Old)
    ad = JobAd.objects.get(pk=closing)
    assert ad.status == "matched"
    assert ExprTree(ad.match_attrs["MATCH_EXP_Where"]).eval() == (
        ExprTree('strcat("]", Name)').eval(oracle)
    )
    assert ad.match_attrs["MATCH_EXP_Where"] == '"]s"'
    ad = JobAd.objects.get(pk=label)
    assert ad.status == "matched"
    assert ad.match_attrs["MATCH_EXP_Label"] == '"[s"'
