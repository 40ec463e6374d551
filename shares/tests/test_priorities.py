"""Priorities derived by hand from DIRAC's rules (docs/developer-guide.md, Job priorities and
share corrections)."""

import pytest

from shares.priorities import AVG, MIN_PRIORITY, Group, TaskQueueLoad, taskqueue_priorities

USER, MC, DATA = 1, 2, 3
ALICE, BOB, CAROL, ERIN, DAVE = 11, 12, 13, 14, 15
GROUPS = {
    USER: Group(USER, 10000, False),
    MC: Group(MC, 300, True),
    DATA: Group(DATA, 40000, True),
}
TQS = [
    TaskQueueLoad(1, ALICE, USER, priority_sum=3, jobs=3),  # three jobs at UserPriority 1
    TaskQueueLoad(2, ALICE, USER, priority_sum=1, jobs=1),
    TaskQueueLoad(3, BOB, USER, priority_sum=5, jobs=1),
    TaskQueueLoad(4, CAROL, MC, priority_sum=2, jobs=2),
    TaskQueueLoad(5, ERIN, MC, priority_sum=6, jobs=2),
    TaskQueueLoad(6, DAVE, DATA, priority_sum=10, jobs=4),
]


def test_non_jobsharing_users_split_the_group_share_and_their_taskqueues_split_by_priority():
    p = taskqueue_priorities(TQS, GROUPS)
    # lhcb_user: U = 2 users with waiting jobs, 10000 / 2 = 5000 each.
    assert p[1] == pytest.approx(5000 * 3 / 4)
    assert p[2] == pytest.approx(5000 * 1 / 4)
    assert p[3] == pytest.approx(5000)


def test_a_jobsharing_group_is_one_entity_whatever_the_owner():
    p = taskqueue_priorities(TQS, GROUPS)
    assert p[4] == pytest.approx(300 * 2 / 8)
    assert p[5] == pytest.approx(300 * 6 / 8)
    assert p[6] == pytest.approx(40000)


def test_avg_consolidation_uses_average_user_priorities():
    p = taskqueue_priorities(TQS, GROUPS, consolidation=AVG)
    assert p[1] == pytest.approx(2500) and p[2] == pytest.approx(2500)  # averages 1 and 1
    assert p[4] == pytest.approx(75) and p[5] == pytest.approx(225)  # averages 1 and 3


def test_n_equal_taskqueues_get_one_nth_each_in_both_modes():
    tqs = [TaskQueueLoad(i, DAVE, DATA, priority_sum=2 * i, jobs=2 * i) for i in (1, 2, 3, 4)]
    avg = taskqueue_priorities(tqs, GROUPS, consolidation=AVG)
    assert all(v == pytest.approx(10000) for v in avg.values())
    summed = taskqueue_priorities(tqs, GROUPS)
    assert summed[4] == pytest.approx(40000 * 8 / 20)  # sum mode weighs by the jobs' sums


def test_corrections_multiply_the_group_then_the_user_share():
    corr = {(USER, None): 2.0, (USER, ALICE): 0.5, (DATA, None): 0.25}
    p = taskqueue_priorities(TQS, GROUPS, corr)
    assert p[1] == pytest.approx(5000 * 2 * 0.5 * 3 / 4)
    assert p[3] == pytest.approx(5000 * 2)
    assert p[6] == pytest.approx(10000)
    assert p[4] == pytest.approx(75)  # no factor: 1


def test_priorities_are_floored():
    groups = {**GROUPS, MC: Group(MC, 0, True)}
    p = taskqueue_priorities(TQS, groups)
    assert p[4] == MIN_PRIORITY and p[5] == MIN_PRIORITY


def test_taskqueues_whose_jobs_all_have_user_priority_zero_share_equally():
    tqs = [TaskQueueLoad(1, DAVE, DATA, 0, 3), TaskQueueLoad(2, DAVE, DATA, 0, 1)]
    p = taskqueue_priorities(tqs, GROUPS)
    assert p == {1: pytest.approx(20000), 2: pytest.approx(20000)}


def test_a_user_without_waiting_jobs_does_not_dilute_the_group():
    tqs = [*TQS, TaskQueueLoad(7, 99, USER, priority_sum=0, jobs=0)]
    assert taskqueue_priorities(tqs, GROUPS)[3] == pytest.approx(5000)


def test_an_unknown_consolidation_is_refused():
    with pytest.raises(ValueError):
        taskqueue_priorities(TQS, GROUPS, consolidation="median")
