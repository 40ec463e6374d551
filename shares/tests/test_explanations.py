"""The rule that names the main reason an entity is off its share (shares.explanations, pure):
one case per reason, in the order the rule tries them, and the clamps."""

from dataclasses import replace

import pytest

from shares.explanations import (
    LOWER,
    UPPER,
    EntityFacts,
    Scope,
    clamp_side,
    main_reason,
    reasons,
)

SCOPE = Scope("groups", running=100.0, pilots_sent=100)

# Below its share (80 % expected, 30 % achieved) with every other cause absent: plenty of work
# that CEs serve, slots, pilots that found work, the best rank, no clamp.
BELOW = EntityFacts(
    label="lhcb_data",
    expected=0.8,
    achieved=0.3,
    running=30.0,
    waiting_jobs=500,
    servable_jobs=500,
    slots=2000,
    pilots_sent=80,
    pilots_found_work=70,
    pilots_no_work=5,
    rank=1,
    ranked=20,
    correction=1.5,
)
ABOVE = replace(BELOW, label="lhcb_user", expected=0.2, achieved=0.7, running=70.0, rank=2)


def test_an_entity_within_two_points_of_its_share_needs_no_reason():
    assert main_reason(replace(BELOW, achieved=0.781), SCOPE) is None
    assert main_reason(replace(BELOW, achieved=0.819), SCOPE) is None


def test_no_reason_when_nothing_ran_or_nothing_of_it_waits():
    assert main_reason(replace(BELOW, achieved=None), SCOPE) is None
    assert main_reason(replace(BELOW, expected=None), SCOPE) is None


def test_most_waiting_jobs_beyond_every_ce_name_the_requirement_that_fails():
    e = replace(BELOW, waiting_jobs=100, servable_jobs=37, blocked={"CPUTime": 63})
    r = main_reason(e, SCOPE)
    assert r is not None and r.code == "unservable"
    assert r.text == "63 % of its waiting jobs need more CPU time than any CE they may use offers"


def test_the_rule_that_blocks_most_jobs_is_named_with_the_share_no_ce_serves_at_all():
    e = replace(BELOW, waiting_jobs=100, servable_jobs=10, blocked={"CPUTime": 30, "Platform": 60})
    r = main_reason(e, SCOPE)
    assert r is not None and r.text == (
        "60 % of its waiting jobs need a platform that no CE they may use offers "
        "(90 % no active CE can serve at all)"
    )


def test_a_few_unservable_jobs_are_the_reason_when_serving_them_would_close_the_gap():
    # 30 running + 40 servable < 80 wanted, and the 45 unservable would make it up.
    e = replace(BELOW, waiting_jobs=85, servable_jobs=40, blocked={"Site": 45})
    r = main_reason(e, SCOPE)
    assert r is not None and r.code == "unservable"
    assert r.text.startswith("53 % of its waiting jobs may run only at sites without")


def test_too_little_servable_work_when_the_unservable_jobs_would_not_fill_its_share():
    e = replace(BELOW, waiting_jobs=20, servable_jobs=15, blocked={"Tag": 5})
    r = main_reason(e, SCOPE)
    assert r is not None and r.code == "little_work"
    assert r.text == (
        "not enough waiting work: 15 waiting jobs that a CE can serve and 30 running, "
        "against about 80 running jobs for its share"
    )


def test_few_slots_when_the_ces_that_could_take_its_jobs_are_smaller_than_its_share():
    r = main_reason(replace(BELOW, slots=50), SCOPE)
    assert r is not None and r.code == "few_slots"
    assert "have 50 slots, fewer than the 80 running jobs of its share" in r.text


def test_pilots_that_found_no_work_come_before_the_number_of_pilots():
    e = replace(BELOW, pilots_sent=10, pilots_found_work=2, pilots_no_work=7)
    r = main_reason(e, SCOPE)
    assert r is not None and r.code == "pilots_no_work"
    assert r.text == "7 of the 10 pilots sent for it in the last hour found no work"


def test_few_pilots_when_it_got_under_half_its_share_of_them():
    r = main_reason(replace(BELOW, pilots_sent=30, pilots_found_work=30, pilots_no_work=0), SCOPE)
    assert r is not None and r.code == "few_pilots"
    assert r.text == (
        "few pilots were sent for it: 30 of 100 in the last hour (30 %, against its 80 % share)"
    )
    # 40 of 100 is half of 80 %: not "few".
    assert main_reason(replace(BELOW, pilots_sent=40), SCOPE).code != "few_pilots"


def test_a_low_priority_rank_when_its_best_taskqueue_is_in_the_lower_half():
    r = main_reason(replace(BELOW, rank=12, ranked=20), SCOPE)
    assert r is not None and r.code == "low_rank"
    assert r.text == "its TaskQueues rank low by priority: the best is rank 12 of 20"
    assert main_reason(replace(BELOW, rank=10, ranked=20), SCOPE).code != "low_rank"


def test_a_correction_at_its_upper_clamp_below_the_share():
    r = main_reason(replace(BELOW, correction=3.0, clamp=UPPER), SCOPE)
    assert r is not None and r.code == "clamp"
    assert r.text == (
        "its correction is at its clamp (×3.00): the corrector cannot raise its priority further"
    )


def test_below_with_no_measured_cause_says_none_stands_out():
    r = main_reason(BELOW, SCOPE)
    assert r is not None and r.code == "unclear"


def test_above_its_share_because_the_others_lack_servable_work():
    short = replace(BELOW, waiting_jobs=100, servable_jobs=0, blocked={"CPUTime": 100})
    got = reasons([short, ABOVE], SCOPE)
    assert got[0] is not None and got[0].code == "unservable"
    assert got[1] is not None and got[1].code == "others_short"
    assert got[1].text == (
        "the other groups lack waiting work that a CE can serve (about 50 running jobs short "
        "of their shares): the slots they leave go to it"
    )


def test_above_its_share_with_its_correction_at_the_lower_clamp():
    r = main_reason(replace(ABOVE, correction=1 / 3, clamp=LOWER), SCOPE)
    assert r is not None and r.code == "clamp"
    assert "(×0.33): the corrector cannot lower its priority further" in r.text


def test_above_its_share_with_many_more_pilots_than_its_share():
    r = main_reason(replace(ABOVE, pilots_sent=60), SCOPE)
    assert r is not None and r.code == "many_pilots"
    assert "60 of 100 in the last hour (60 %, against its 20 % share)" in r.text
    assert main_reason(replace(ABOVE, pilots_sent=25), SCOPE).code == "unclear"


# The seed's two rules that defeat a share, as the Shares page names them when they are on.
SEED_RULES = replace(SCOPE, waiting_jobs=1000, per_job_term=True, segment_precedence=True)


def test_the_pilots_per_job_term_holds_a_group_with_few_of_the_waiting_jobs_below_its_share():
    e = replace(BELOW, waiting_jobs=300, servable_jobs=300, pilots_sent=50)
    r = main_reason(e, SEED_RULES)
    assert r is not None and r.code == "per_job_term"
    assert r.text == (
        "half of each director cycle's pilots follow the waiting jobs, not the shares "
        "(PilotsPerJobTerm, the seed's pilotsPerJob term): it has 30 % of the waiting jobs and "
        "got 50 % of the pilots in the last hour, against its 80 % share"
    )
    # The same group with the term off: nothing of the kind is named.
    assert main_reason(e, replace(SEED_RULES, per_job_term=False)).code != "per_job_term"
    # The pilots it missed make under half its gap (80 % - 30 %): not the main reason.
    assert main_reason(replace(e, pilots_sent=56), SEED_RULES).code != "per_job_term"


def test_the_pilots_per_job_term_lifts_a_group_with_most_of_the_waiting_jobs_above_its_share():
    e = replace(ABOVE, waiting_jobs=700, servable_jobs=700, pilots_sent=45)
    r = main_reason(e, SEED_RULES)
    assert r is not None and r.code == "per_job_term"
    assert "it has 70 % of the waiting jobs and got 45 % of the pilots" in r.text
    assert main_reason(replace(e, pilots_sent=44), SEED_RULES).code != "per_job_term"


def test_the_cpu_segment_precedence_holds_a_group_whose_jobs_are_in_lower_segments():
    data = replace(BELOW, segments={500: 200, 5000: 250, 300000: 50})
    user = replace(
        ABOVE, pilots_sent=20, waiting_jobs=300, servable_jobs=300, segments={300000: 300}
    )
    precedence = replace(SEED_RULES, per_job_term=False)
    got = reasons([data, user], precedence)
    assert got[0] is not None and got[0].code == "cpu_precedence"
    assert got[0].text == (
        "90 % of its waiting jobs that a CE can serve are in lower CPU segments than the other "
        "groups' (300,000 s): with MatchCPUSegmentPrecedence on, a pilot takes the highest CPU "
        "segment it can run first"
    )
    # lhcb_user is above because the rule holds lhcb_data below...
    assert got[1] is not None and got[1].code == "others_held"
    assert got[1].text == (
        "the seed's CPU-segment precedence (MatchCPUSegmentPrecedence) holds the other groups "
        "below their shares (lhcb_data: about 50 running jobs short): the slots they miss go to it"
    )
    # ...and, with no one held, because its own work is in the higher segments.
    r = main_reason(user, precedence, others=data.segments)
    assert r is not None and r.code == "cpu_precedence"
    assert r.text.startswith(
        "100 % of its waiting jobs that a CE can serve are in higher CPU segments than most of "
        "the other groups' (90 % of theirs at most 5,000 s)"
    )
    # Precedence off (the living demo's setting), or the work in the same segment: not named.
    off = reasons([data, user], replace(precedence, segment_precedence=False))
    assert [r.code for r in off if r] == ["unclear", "unclear"]
    alike = reasons([replace(data, segments={300000: 500}), user], precedence)
    assert [r.code for r in alike if r] == ["unclear", "unclear"]


def test_a_users_reason_speaks_of_the_other_users_of_its_group():
    scope = Scope("users of lhcb_user", running=10.0, pilots_sent=10)
    bob = EntityFacts("bob", 0.5, 0.0, waiting_jobs=4, servable_jobs=0, blocked={"Tag": 4})
    alice = EntityFacts("alice", 0.5, 1.0, running=10.0, waiting_jobs=50, servable_jobs=50)
    _, r = reasons([bob, alice], scope)
    assert r is not None and r.text.startswith("the other users of lhcb_user lack waiting work")


@pytest.mark.parametrize(
    ("factor", "slices", "expected"),
    [
        (3.0, {"Week": 1.2, "Hour": 5.0}, UPPER),  # the global factor at its bound
        (1 / 3, {"Week": 0.5, "Hour": 0.2}, LOWER),
        (1.8, {"Week": 2.0, "Hour": 5.0}, UPPER),  # every slice at its own bound
        (1.8, {"Week": 2.0, "Hour": 1.0}, None),
        (1.0, {"Week": 1.0, "Hour": 1.0}, None),
    ],
)
def test_a_correction_is_at_a_clamp_at_its_global_bound_or_every_slices(factor, slices, expected):
    assert clamp_side(factor, slices, 3.0, {"Week": 2.0, "Hour": 5.0}) == expected


def test_a_correction_of_an_instance_no_longer_configured_is_judged_by_nothing():
    assert clamp_side(3.0, {"Week": 2.0}, None, {}) is None
