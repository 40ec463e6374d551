"""The causes an operator can act on that the rule names when an entity is off its share
(shares.explanations with shares.causes, pure): a small share is judged against itself, and each
cause (the corrector's clamp with its parameter, the director's decisions, the CEs' waiting
slots, pilots that ran the others' jobs, jobs held in brokerage, a recent JobShare change) is
named with its figures."""

from dataclasses import replace

from shares.explanations import (
    UPPER,
    DirectorFacts,
    EntityFacts,
    Scope,
    ShareChange,
    clamp_at,
    is_off,
    main_reason,
)

SCOPE = Scope("groups", running=139.0, pilots_sent=180)

# lhcb_mc on the demo: 0.6 % expected, nothing running while 1,177 jobs that a CE can serve
# wait, rank 88 of 136, one pilot in the hour that found no work.
SMALL = EntityFacts(
    label="lhcb_mc",
    expected=0.006,
    achieved=0.0,
    running=0.0,
    waiting_jobs=1177,
    servable_jobs=1177,
    slots=144,
    pilots_sent=1,
    pilots_found_work=0,
    pilots_no_work=1,
    rank=88,
    ranked=136,
    correction=1.0,
)

# Below its share (80 % expected, 30 % achieved) with every other cause absent.
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
SCOPE_80 = Scope("groups", running=100.0, pilots_sent=100)


def test_a_small_share_with_nothing_running_while_servable_work_waits_is_off_its_share():
    assert is_off(SMALL, SCOPE)
    # Off by over half of its own share, and by more than half a running job.
    assert is_off(replace(SMALL, achieved=0.0025, running=0.35), SCOPE)
    # Near its share, or nothing of it that a CE can serve: not off.
    assert not is_off(replace(SMALL, achieved=0.005, running=0.7), SCOPE)
    assert not is_off(replace(SMALL, servable_jobs=0), replace(SCOPE, running=10.0))


def test_a_small_group_starved_of_pilots_by_full_ce_waiting_slots_is_told_so():
    starved = replace(
        SMALL,
        pilots_sent=0,
        pilots_no_work=0,
        director=DirectorFacts(decisions=366, drawn=686, submitted=0, slots_full=366, lam=675.6),
    )
    r = main_reason(starved, replace(SCOPE, lam=54_000.0))
    assert r is not None and r.code == "ces_full"
    assert r.text == (
        "the CEs had no free waiting slots for its pilots: the director drew 686 for its "
        "TaskQueues in the last hour and the CEs took 0 (in 366 of its 366 decisions), 0 % of "
        "all the pilots sent, against its 0.6 % share; the λ of its TaskQueues (their "
        "priority, weighted up for CPU segments shorter than maxCPU down to lowestCPUBoost) "
        "was 1.3 % of the director's: a cycle shares a CE's scarce waiting slots by the "
        "TaskQueues' λ"
    )
    # With its share of the pilots (1 of 180), the CEs' slots are not its cause.
    fed = replace(starved, pilots_sent=1, pilots_found_work=1)
    assert main_reason(fed, replace(SCOPE, lam=54_000.0)).code != "ces_full"


def test_a_small_group_whose_one_pilot_found_no_work_names_that_pilot():
    r = main_reason(SMALL, SCOPE)
    assert r is not None and r.code == "pilots_no_work"
    assert r.text == "1 of the 1 pilots sent for it in the last hour found no work"


def test_the_corrector_at_its_clamp_is_named_with_the_bound_and_its_parameter():
    clamp = clamp_at(2.6, {"HourSlice": 5.0, "RecentSlice": 2.0}, 3.0,
                     {"HourSlice": 5.0, "RecentSlice": 2.0}, "GroupsInstance")  # fmt: skip
    assert clamp is not None and clamp.side == UPPER
    at_clamp = replace(
        SMALL, pilots_no_work=0, pilots_sent=0, correction=2.6, clamp=UPPER, clamp_detail=clamp
    )
    # A small group with no other cause: its correction is the cause.
    r = main_reason(replace(at_clamp, rank=1, pilots_sent=2, pilots_found_work=2), SCOPE)
    assert r is not None and r.code == "clamp"
    assert r.text == (
        "its correction ×2.60 is at the corrector's upper clamp (MaxCorrection of every slice "
        "of GroupsInstance: HourSlice 5, RecentSlice 2): the corrector cannot raise its "
        "priority further"
    )
    # At the global bound, MaxGlobalCorrectionFactor is the one named.
    top = clamp_at(3.0, {"HourSlice": 5.0, "RecentSlice": 2.0}, 3.0, {}, "GroupsInstance")
    assert top is not None and "(MaxGlobalCorrectionFactor 3 of GroupsInstance)" in (top.sentence())


def test_the_clamp_is_said_beside_another_main_cause():
    clamp = clamp_at(3.0, {}, 3.0, {}, "GroupsInstance")
    e = replace(SMALL, correction=3.0, clamp=UPPER, clamp_detail=clamp)
    r = main_reason(e, SCOPE)
    assert r is not None and r.code == "pilots_no_work"
    assert r.text.endswith(
        "; its correction ×3.00 is at the corrector's upper clamp (MaxGlobalCorrectionFactor 3 "
        "of GroupsInstance): the corrector cannot raise its priority further"
    )


def test_a_director_note_that_stops_its_pilots_is_named():
    # lhcb_test on the demo: its TaskQueue's pool is external, nothing came from outside.
    external = replace(
        SMALL,
        label="lhcb_test",
        expected=0.002,
        waiting_jobs=1,
        servable_jobs=1,
        pilots_sent=0,
        pilots_no_work=0,
        rank=35,
        ranked=175,
        director=DirectorFacts(
            decisions=26,
            drawn=387,
            blocker="pool DIRAC: its pilots are started outside this director",
            blocked=26,
        ),
    )
    r = main_reason(external, SCOPE)
    assert r is not None and r.code == "director_blocked"
    assert r.text == (
        "the director sends its TaskQueues no pilots: pool DIRAC: its pilots are started "
        "outside this director (26 of the 26 director decisions of the last hour that drew 387 "
        "pilots for it; no pilot came for it)"
    )


def test_pilots_that_ran_only_the_others_jobs_name_its_rank():
    e = replace(BELOW, rank=14, ranked=20, pilots_found_work=60, pilots_elsewhere=50)
    r = main_reason(e, SCOPE_80)
    assert r is not None and r.code == "pilots_elsewhere"
    assert r.text == (
        "50 of the 80 pilots sent for it in the last hour ran only jobs of the other groups "
        "and 5 found no work: a pilot takes the TaskQueues it matches by priority, and its "
        "best ranks 14 of 20"
    )


def test_jobs_held_in_brokerage_are_the_reason_when_its_servable_work_cannot_fill_its_share():
    e = replace(BELOW, waiting_jobs=10, servable_jobs=10, held={"throttled": 400, "assigned": 12})
    r = main_reason(e, SCOPE_80)
    assert r is not None and r.code == "held"
    assert r.text == (
        "412 of its jobs are held in brokerage, not yet in a TaskQueue (assigned 12, throttled "
        "400): only 10 waiting jobs that a CE can serve and 30 running, against about 80 "
        "running jobs for its share"
    )


def test_a_recent_jobshare_raise_is_named_below_and_a_cut_above():
    raised = ShareChange(old=100, new=40000, minutes_ago=25, slice_name="RecentSlice",
                         slice_hours=6)  # fmt: skip
    r = main_reason(replace(BELOW, share_change=raised), SCOPE_80)
    assert r is not None and r.code == "share_change"
    assert r.text == (
        "its JobShare changed from 100 to 40000 25 min ago: the achieved share (the last "
        "hour's average) and the correction still count the running jobs before it "
        "(RecentSlice spans 6 h)"
    )
    # A raise does not explain being above its share; a cut two hours ago does.
    above = replace(BELOW, expected=0.2, achieved=0.7, running=70.0)
    assert main_reason(replace(above, share_change=raised), SCOPE_80).code != "share_change"
    cut = replace(raised, old=40000, new=100, minutes_ago=130)
    r = main_reason(replace(above, share_change=cut), SCOPE_80)
    assert r is not None and r.code == "share_change"
    assert "the correction still counts the running jobs before it" in r.text


def test_above_its_share_on_pilots_sent_for_the_others_names_them():
    users = Scope("users of lhcb_user", running=20.0, pilots_sent=337)
    admin = replace(
        BELOW,
        label="admin",
        expected=0.25,
        achieved=0.39,
        running=7.8,
        pilots_sent=71,
        pilots_found_work=60,
        pilots_no_work=0,
        rank=29,
        ranked=245,
        pilots_ran_it=201,
        pilots_ran_it_for_others=156,
    )
    r = main_reason(admin, users)
    assert r is not None and r.code == "others_pilots"
    assert r.text == (
        "156 of the 201 pilots that ran its jobs in the last hour were sent for TaskQueues of "
        "the other users of lhcb_user (21 % of the pilots were sent for its own, against the "
        "39 % it ran): a pilot takes the TaskQueues it matches by priority, whoever it was "
        "sent for; its best TaskQueue ranks 29 of 245"
    )
    # Its own pilots account for what it ran: not the others'.
    assert main_reason(replace(admin, pilots_sent=140), users).code != "others_pilots"


def test_the_directors_lambda_under_its_share_is_named_when_nothing_else_is():
    e = replace(BELOW, director=DirectorFacts(lam=500.0))
    r = main_reason(e, replace(SCOPE_80, lam=1000.0))
    assert r is not None and r.code == "lambda"
    assert r.text == (
        "the director aims fewer pilots at it than its share: the λ of its TaskQueues was 50 % "
        "of the director's in the last hour, against its 80 % share (λ: their priority, "
        "weighted up for CPU segments shorter than maxCPU down to lowestCPUBoost)"
    )
    # λ at 70 % misses 10 points of a 50-point gap: not the cause.
    e = replace(BELOW, director=DirectorFacts(lam=700.0))
    assert main_reason(e, replace(SCOPE_80, lam=1000.0)).code == "unclear"
