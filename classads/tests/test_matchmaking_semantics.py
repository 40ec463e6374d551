"""The negotiator's semantics, through the cycle: symmetric Requirements that must hold (true
or a non-zero number), Rank as a float, ties, WantAdRevaluate, `=?=`, integer division, `$$()`
and holds."""

import pytest
from classad2 import ClassAd

from classads import ads, match_analysis, negotiation, semantics
from classads.models import JobAd, SiteAd
from classads.tests.conftest import site_ad_text
from core.cycles import run_cycle

pytestmark = pytest.mark.django_db

USCMS_JOB = "+WANT_USCMS_MATCHMAKER = True\nRequirements = Is_USCMS_Site =?= True\n"


def negotiate():
    run = run_cycle("negotiator")
    assert run.status == "success", run.error
    return run.counts


def matched_site(job_ad_id):
    return JobAd.objects.get(pk=job_ad_id).site_ad_name


# --- semantics of the library --------------------------------------------------------------------


def test_classad_evaluation_has_the_negotiators_semantics_not_strict_ones():
    # Fails if STRICT_CLASSAD_EVALUATION (or a missing htcondor2 import) ever turns them off.
    assert semantics.negotiator_semantics() is True
    job = ClassAd("[Requirements = Is_USCMS_Site =?= true]")  # unscoped: only the site has it
    site = ClassAd("[Requirements = true; Is_USCMS_Site = true]")
    assert job.symmetricMatch(site) is True


def test_the_start_up_self_test_refuses_strict_semantics(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setattr(semantics, "negotiator_semantics", lambda: False)
    with pytest.raises(ImproperlyConfigured):
        semantics.self_test()


def test_undefined_is_not_a_match_and_neither_is_its_negation():
    site = ClassAd("[Requirements = TARGET.Memory > 2000]")
    negated = ClassAd("[Requirements = !(TARGET.Memory > 2000)]")
    job = ClassAd("[Requirements = true; Rank = 0.0]")  # no Memory: both are UNDEFINED
    assert negotiation.pair_rank(job, site) is None
    assert negotiation.pair_rank(job, negated) is None
    [row] = match_analysis.analyse(job, [("s", site)])
    assert row["site_clauses"] == [
        {"clause": "TARGET.Memory > 2000", "value": "UNDEFINED", "passes": False}
    ]
    small = ClassAd("[Requirements = true; Rank = 0.0; Memory = 1000]")
    assert match_analysis.analyse(small, [("s", site)])[0]["site_clauses"][0]["value"] == "false"
    assert negotiation.pair_rank(small, negated) == 0.0  # false negated is a match


def test_meta_equality_is_false_not_undefined_for_a_missing_attribute_and_minds_case():
    job = ClassAd("[Requirements = true; Rank = 0.0]")
    strict = ClassAd("[Requirements = TARGET.WANT_USCMS_MATCHMAKER =?= true]")
    loose = ClassAd("[Requirements = TARGET.WANT_USCMS_MATCHMAKER == true]")
    meta_ne = ClassAd("[Requirements = TARGET.WANT_USCMS_MATCHMAKER =!= true]")
    assert match_analysis.clauses(strict, job)[0]["value"] == "false"
    assert match_analysis.clauses(loose, job)[0]["value"] == "UNDEFINED"
    assert negotiation.pair_rank(job, meta_ne) == 0.0
    named = ClassAd('[Requirements = true; Rank = 0.0; Site = "USCMS"]')
    assert negotiation.pair_rank(named, ClassAd('[Requirements = TARGET.Site == "uscms"]')) == 0.0
    assert negotiation.pair_rank(named, ClassAd('[Requirements = TARGET.Site =?= "uscms"]')) is None


def test_rank_is_read_as_a_float_bools_count_and_text_is_zero():
    site = ClassAd("[Requirements = true]")
    for rank, expected in [("3", 3.0), ("2.5", 2.5), ("true", 1.0), ('"high"', 0.0)]:
        assert negotiation.pair_rank(ClassAd(f"[Requirements = true; Rank = {rank}]"), site) == (
            expected
        )
    assert ads.parse_job_ad("[Requirements = true]")["Rank"] == 0.0  # condor_submit's default


def test_top_level_clauses_are_split_outside_strings_and_parentheses():
    text = '(A && B) && (C || "x && y") && TARGET.D =?= true'
    assert ads.split_conjuncts(f"({text})") == ["A && B", 'C || "x && y"', "TARGET.D =?= true"]


# --- the cycle ------------------------------------------------------------------------------------


def test_integer_division_in_rank_ties_every_site_but_real_separates_them(advertise, submit_ad):
    advertise(site_ad_text("busy", cur=1, max_matches=4))  # -1/4 = 0 in integers
    advertise(site_ad_text("empty", cur=0, max_matches=4))
    integer = submit_ad(USCMS_JOB + "Rank = -CurMatches/MaxMatches").data["id"]
    negotiate()
    assert matched_site(integer) == "busy"  # a tie at 0: the earlier ad wins

    SiteAd.objects.update(cur_matches=1)
    SiteAd.objects.filter(name="empty").update(cur_matches=0)
    real = submit_ad(USCMS_JOB + "Rank = -CurMatches/real(MaxMatches)").data["id"]
    negotiate()
    assert matched_site(real) == "empty"  # -0.0 beats -0.25


def test_ties_go_to_the_earlier_ad_and_a_revaluated_ad_moves_to_the_end(advertise, submit_ad):
    for name in ("first", "second", "third"):
        advertise(site_ad_text(name, max_matches=10))
    ids = [submit_ad(USCMS_JOB).data["id"] for _ in range(4)]
    negotiate()
    # Equal Rank 0.0: first, then (first moved to the end) second, third, first again.
    assert [matched_site(i) for i in ids] == ["first", "second", "third", "first"]
    assert dict(SiteAd.objects.values_list("name", "cur_matches")) == {
        "first": 2,
        "second": 1,
        "third": 1,
    }


def test_without_wantadrevaluate_an_ad_takes_one_match_per_cycle(advertise, submit_ad):
    advertise(site_ad_text("once", max_matches=10, revaluate=False))
    ids = [submit_ad(USCMS_JOB).data["id"] for _ in range(2)]
    assert negotiate()["matches"] == 1
    assert SiteAd.objects.get(name="once").cur_matches == 0  # only WantAdRevaluate increments
    assert negotiate()["matches"] == 1
    assert {JobAd.objects.get(pk=i).status for i in ids} == {"matched"}


def test_the_highest_rank_wins_whatever_the_order(advertise, submit_ad):
    advertise(site_ad_text("small", extra="Memory = 2048\n"))
    advertise(site_ad_text("large", extra="Memory = 16384\n"))
    advertise(site_ad_text("none"))  # Rank UNDEFINED -> 0.0
    job = submit_ad(USCMS_JOB + "Rank = TARGET.Memory").data["id"]
    negotiate()
    assert matched_site(job) == "large"
    assert JobAd.objects.get(pk=job).rank == 16384.0


def test_the_jobs_requirements_must_hold_too(advertise, submit_ad):
    advertise(site_ad_text("small", extra="Memory = 2048\n"))
    job = submit_ad(
        USCMS_JOB + "+RequestMemory = 4096\nRequirements = TARGET.Memory >= "
        "RequestMemory && Is_USCMS_Site =?= True"
    ).data["id"]
    assert negotiate()["matches"] == 0
    assert JobAd.objects.get(pk=job).status == "idle"


def test_a_failed_dollar_dollar_expansion_holds_the_job_with_htcondors_reason(
    advertise, submit_ad, users, api
):
    advertise(site_ad_text("plain"))
    job = submit_ad(USCMS_JOB + "GlobusScheduler = $$(GatekeeperURL)").data["id"]
    counts = negotiate()
    assert counts["held"] == 1
    held = JobAd.objects.get(pk=job)
    assert held.status == "held"
    assert held.hold_reason == "Cannot expand $$ expression (GatekeeperURL)."
    assert not held.node_jobs.exists()  # nothing was submitted to the site
    response = api(users["carol"]).post(f"/api/v1/classads/jobs/{job}/release/")
    assert response.status_code == 200
    assert response.data["status"] == "idle"


def test_dollar_dollar_defaults_and_expressions_expand_against_the_matched_ad(advertise, submit_ad):
    advertise(site_ad_text("expr", max_matches=7))
    job = submit_ad(
        USCMS_JOB
        + "Queue = $$(QueueName:short)\n"
        + "Slots = $$([MaxMatches - CurMatches])\n"
        + 'Where = $$([strcat(Name, "/", GridSite)])'
    ).data["id"]
    negotiate()
    ad = JobAd.objects.get(pk=job)
    assert ad.status == "matched"
    assert ad.match_attrs["MATCH_QueueName"] == "short"
    assert ad.match_attrs["MATCH_EXP_Queue"] == '"short"'
    assert ad.match_attrs["MATCH_EXP_Slots"] == '"7"'  # the ad as matched: CurMatches 0
    assert ad.match_attrs["MATCH_EXP_Where"] == '"expr/expr"'


def test_an_undefined_expression_or_a_scoped_name_cannot_be_expanded(advertise, submit_ad):
    advertise(site_ad_text("plain"))
    number = submit_ad(USCMS_JOB + "X = $$([NoSuchAttr + 1])").data["id"]
    scoped = submit_ad(USCMS_JOB + "Y = $$(TARGET.Name)").data["id"]
    negotiate()
    assert JobAd.objects.get(pk=number).hold_reason == (
        "Cannot expand $$ expression ([NoSuchAttr + 1])."
    )
    assert JobAd.objects.get(pk=scoped).hold_reason == "Cannot expand $$ expression (TARGET.Name)."


def test_jobs_with_the_same_significant_attributes_share_one_autocluster(advertise, submit_ad):
    advertise(site_ad_text("a", max_matches=100, extra="Memory = 4096\n"))
    for _ in range(3):
        submit_ad(USCMS_JOB + "+RequestMemory = 1000\nexecutable = /bin/a")
    submit_ad(USCMS_JOB + "+RequestMemory = 1000\nexecutable = /bin/b")  # not significant
    submit_ad(USCMS_JOB + "+RequestMemory = 2000\nRank = RequestMemory")
    counts = negotiate()
    assert counts["autoclusters"] == 2
    assert counts["matches"] == 5


def test_a_bigger_share_is_matched_first_when_sites_are_short(advertise, submit_ad, users):
    from shares.models import GridGroup

    GridGroup.objects.filter(name="lhcb_data").update(job_share=40000)
    GridGroup.objects.filter(name="lhcb_mc").update(job_share=100)
    advertise(site_ad_text("scarce", max_matches=1))
    small = submit_ad(USCMS_JOB, user="carol", owner_group="lhcb_mc").data["id"]
    big = submit_ad(USCMS_JOB, user="dave", owner_group="lhcb_data").data["id"]
    negotiate()
    assert JobAd.objects.get(pk=big).status == "matched"
    assert JobAd.objects.get(pk=small).status == "idle"


def test_fair_share_order_interleaves_queues_in_proportion_to_priority():
    order = negotiation.fair_share_order([(0, 2.0, [1, 2, 3, 4]), (1, 1.0, [10, 11])])
    assert [job for job, _ in order] == [1, 2, 10, 3, 4, 11]


def test_fair_share_batches_keep_a_queues_jobs_together_in_its_turn():
    order = negotiation.fair_share_order([(0, 2.0, [1, 2, 3, 4]), (1, 1.0, [10, 11])], batch=2)
    assert [job for job, _ in order] == [1, 2, 3, 4, 10, 11]  # a tie at 1.0: queue order
