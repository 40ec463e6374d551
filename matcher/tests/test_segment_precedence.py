"""MatchCPUSegmentPrecedence: the seed's highest-CPU-segment-first rule (on, the default: with
the seed's CPU segments bench/fairshare.py's shares came closer to the JobShares with it), or one
draw by priority among every TaskQueue a pilot fits (off)."""

import random
from collections import Counter

from core import gdpconfig
from core.cycles import run_cycle
from matcher import dispatcher
from matcher.matching import Resource

BIG = Resource(site="LCG.CERN.ch", setup="any", cpu_time=10**6)


def _long_and_short(submit):
    """alice's long jobs (segment 300000) and dave's short ones (segment 500): lhcb_data's
    priority is far above lhcb_user's."""
    long = {submit("alice", cpu_time=200_000).pk for _ in range(12)}
    short = {submit("dave", cpu_time=100).pk for _ in range(12)}
    assert run_cycle("priorities").status == "success"
    return long, short


def test_by_default_a_pilot_follows_the_seeds_segment_precedence(db):
    assert gdpconfig.get("MatchCPUSegmentPrecedence") is True


def test_with_segment_precedence_a_pilot_takes_the_longest_segment_first(submit):
    gdpconfig.set_value("MatchCPUSegmentPrecedence", True)
    long, _ = _long_and_short(submit)
    rng = random.Random(11)
    got = [dispatcher.match_job(BIG, f"p{i}", rng=rng).job.id for i in range(10)]
    assert set(got) <= long


def test_without_segment_precedence_a_pilot_draws_among_every_segment_by_priority(submit):
    gdpconfig.set_value("MatchCPUSegmentPrecedence", False)
    _, short = _long_and_short(submit)
    rng = random.Random(11)
    got = Counter(
        "short" if dispatcher.match_job(BIG, f"p{i}", rng=rng).job.id in short else "long"
        for i in range(10)
    )
    assert got["short"] > got["long"], got


def test_the_draw_table_says_which_taskqueues_a_pilot_may_draw_under_each_rule(submit):
    _long_and_short(submit)
    gdpconfig.set_value("MatchCPUSegmentPrecedence", True)
    seed_rule = dispatcher.taskqueue_draw_table(BIG)
    assert [(r["tq"].cpu_time, r["fallback"]) for r in seed_rule] == [
        (300000, False),
        (500, True),
    ]
    assert seed_rule[1]["probability"] == 0.0
    gdpconfig.set_value("MatchCPUSegmentPrecedence", False)
    one_draw = dispatcher.taskqueue_draw_table(BIG)
    assert not any(r["fallback"] for r in one_draw)
    assert all(r["probability"] > 0 for r in one_draw)
    assert abs(sum(r["probability"] for r in one_draw) - 1.0) < 1e-9
    assert one_draw[0]["tq"].cpu_time == 500  # lhcb_data's, the higher priority


def test_the_merged_draw_follows_priority_changes_and_new_taskqueues(submit):
    gdpconfig.set_value("MatchCPUSegmentPrecedence", False)
    _long_and_short(submit)
    first = {i for race in dispatcher.view.races_for(BIG, False) for i in race.ids}
    third = submit("bob", cpu_time=4000)
    [race] = dispatcher.view.races_for(BIG, False)
    assert set(race.ids) == first | {third.task_queue_id}
