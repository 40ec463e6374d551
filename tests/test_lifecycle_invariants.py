"""The job lifecycle as data (matcher.lifecycle) agrees with the models and with what the code
does: a simulated grid run, checked after every tick."""

import random

import pytest

from brokerage import demo as panda_demo
from brokerage.topology import import_topology
from config import clock
from matcher import bulk, demo, lifecycle
from matcher.models import JobStatus, JobStatusHistory
from simulation import services as simulation
from tests._invariants import assert_job_invariants
from timeouts import rules

TICKS = 4


def test_the_lifecycle_names_exactly_the_model_states_and_its_groupings_are_of_them():
    assert lifecycle.STATES == tuple(JobStatus.values)
    assert lifecycle.FINAL_STATES == {"finished", "failed", "cancelled", "closed"}
    assert lifecycle.LIVE_STATES | lifecycle.FINAL_STATES == set(JobStatus.values)
    assert set(lifecycle.PILOT_REPORTS) == lifecycle.CLAIMED_STATES
    for name in dir(lifecycle):
        value = getattr(lifecycle, name)
        if name.isupper() and isinstance(value, (tuple, frozenset)) and name != "MOVES":
            assert set(value) <= set(JobStatus.values), name


def test_allowed_answers_from_the_table_and_refuses_what_no_code_does():
    assert lifecycle.allowed(lifecycle.NEW, "activated")
    assert lifecycle.allowed("activated", "sent")
    assert lifecycle.allowed("running", "finished")
    assert not lifecycle.allowed("finished", "activated")  # reschedule never reruns success
    assert not lifecycle.allowed("cancelled", "activated")
    assert not lifecycle.allowed("activated", "running")  # a claim comes first
    assert not lifecycle.allowed("nonsense", "failed")
    for state in lifecycle.FINAL_STATES - {"failed"}:
        assert not lifecycle.TRANSITIONS.get(state)


def test_every_pilot_report_kill_and_reschedule_the_actions_allow_is_in_the_table():
    for source, targets in lifecycle.PILOT_REPORTS.items():
        assert all(lifecycle.allowed(source, to) for to in targets)
    for state in lifecycle.LIVE_STATES:
        assert lifecycle.allowed(state, "cancelled")
    rule = lifecycle.JOB_ACTIONS["reschedule"]
    assert all(lifecycle.allowed(s, "activated") for s in rule.owner | rule.staff)


def test_every_timeout_rule_moves_its_states_only_where_the_table_allows():
    outcomes = {
        rules.REBROKER: {"defined", "activated", "failed"},
        rules.REASSIGN: {"closed", "activated", "failed"},
        **{action: {to} for action, to in rules.TO_STATUS.items()},
    }
    for rule in rules.RULE.values():
        for state in rule.states:
            for to in outcomes[rule.action]:
                assert lifecycle.allowed(state, to), (rule.name, state, to)


def _disallowed_transitions() -> dict[tuple[str, str], int]:
    seen: dict[tuple[str, str], int] = {}
    for pair in JobStatusHistory.objects.values_list("from_status", "to_status").distinct():
        if not lifecycle.allowed(*pair):
            seen[pair] = JobStatusHistory.objects.filter(
                from_status=pair[0], to_status=pair[1]
            ).count()
    return seen


@pytest.fixture
def simulated_grid(world, settings):
    settings.SIMULATED_CLOCK = True
    clock.invalidate()
    import_topology(panda_demo.topology())
    bulk.load_jobs(200, seed=7, batch_size=100)
    demo.first_pilots()
    yield
    clock.invalidate()


def test_after_every_tick_of_the_simulated_grid_the_invariants_hold_and_every_transition_is_allowed(
    simulated_grid,
):
    rng = random.Random(11)
    assert_job_invariants()
    assert not _disallowed_transitions()
    moved: set[tuple[str, str]] = set()
    for tick in range(TICKS):
        clock.advance(15 * 60)
        simulation.simulation_tick(rng=rng, minutes=15)
        assert_job_invariants()
        assert not _disallowed_transitions(), f"tick {tick}"
        moved |= set(JobStatusHistory.objects.values_list("from_status", "to_status").distinct())
    # The run moved jobs along brokerage, claims and the pilots' reports, not only into being.
    assert {("defined", "activated"), ("activated", "sent")} <= moved
    assert any(source in lifecycle.CLAIMED_STATES for source, _ in moved)
