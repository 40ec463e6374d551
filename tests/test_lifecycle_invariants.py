"""The job lifecycle as data (matcher.lifecycle) agrees with the models and with what the code
does: a simulated grid run, checked after every tick: the membership invariant holds, every
recorded transition is allowed, and every statement writing a job table came from the
lifecycle's one writer, matcher.services (tests/_one_writer.py)."""

import random

import pytest

from brokerage.topology_import import import_topology
from core import clock
from matcher import bulk, lifecycle
from matcher.models import JobStatus, JobStatusHistory
from simulation import demo as pilot_demo
from simulation import panda_demo
from simulation import services as simulation
from tests._invariants import assert_job_invariants
from tests._one_writer import job_writes_outside_owner
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
    """The demo grid with 200 jobs loaded and its first pilots; yields the job-table writes
    made outside the lifecycle's owner meanwhile ({module: statements}, to stay empty)."""
    settings.SIMULATED_CLOCK = True
    clock.invalidate()
    with job_writes_outside_owner() as outside:
        import_topology(panda_demo.topology())
        bulk.load_jobs(200, seed=7, batch_size=100)
        pilot_demo.first_pilots()
        yield outside
    clock.invalidate()


def _assert_one_writer(outside: dict, when: str) -> None:
    assert not outside, f"job tables written outside matcher.services ({when}): {outside}"


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
        _assert_one_writer(simulated_grid, f"tick {tick}")
        moved |= set(JobStatusHistory.objects.values_list("from_status", "to_status").distinct())
    # The run moved jobs along brokerage, claims and the pilots' reports, not only into being.
    assert {("defined", "activated"), ("activated", "sent")} <= moved
    assert any(source in lifecycle.CLAIMED_STATES for source, _ in moved)


def _user_actions(rng: random.Random, staff) -> int:
    """Users at work between ticks: kill a few live jobs, reschedule a few failed or running
    ones (as staff, through the services the API calls). Returns the actions taken."""
    from matcher import services as job_services
    from matcher.models import Job

    def some(states, n: int) -> list[int]:
        ids = list(Job.objects.filter(status__in=states).values_list("pk", flat=True)[:50])
        return rng.sample(ids, min(n, len(ids)))

    done = 0
    for pk in some(("activated", "sent", "running"), 3):
        job_services.kill_job(pk, staff, "killed between ticks")
        done += 1
    for pk in some(("failed", "running"), 2):
        try:
            job_services.reschedule_job(pk, staff)
            done += 1
        except job_services.JobActionError:
            pass  # MaxRescheduling reached
    return done


def test_timeouts_dag_nodes_kills_and_reschedules_keep_the_invariants_and_every_move_allowed(
    simulated_grid, users, submit
):
    """Every app that moves jobs, through the lifecycle's service: the simulated grid's cycles
    (brokerage, the matcher, pilots, the negotiator's DAG nodes, the timeouts), users killing
    and rescheduling between ticks, then a jump of days so that the timeout rules fire."""
    from classads.models import JobAdNode
    from timeouts.models import TimeoutAction

    rng = random.Random(5)
    actions = 0
    for tick in range(TICKS):
        clock.advance(15 * 60)
        simulation.simulation_tick(rng=rng, minutes=15)
        actions += _user_actions(rng, users["admin"])
        assert_job_invariants()
        assert not _disallowed_transitions(), f"tick {tick}"
        _assert_one_writer(simulated_grid, f"tick {tick}")
    # Jobs no CE takes: they wait in their TaskQueue until the activated timeout fires.
    stuck = {submit("alice", cpu_time=100, tags=["NoSuchTag"]).pk for _ in range(3)}
    for jump in range(2):
        clock.advance(3 * 86400)  # past every state's timeout
        simulation.simulation_tick(rng=rng, minutes=15)
        assert_job_invariants()
        assert not _disallowed_transitions(), f"jump {jump}"
        _assert_one_writer(simulated_grid, f"jump {jump}")
    moved = set(JobStatusHistory.objects.values_list("from_status", "to_status").distinct())
    assert actions and {("failed", "activated"), ("running", "activated")} & moved
    assert any(to == "cancelled" for _, to in moved), "no user killed a job"
    assert JobAdNode.objects.exists(), "the negotiator made no DAG node job"
    timed_out = set(TimeoutAction.objects.values_list("from_status", "to_status").distinct())
    assert timed_out <= moved
    rescheduled = TimeoutAction.objects.filter(job_id__in=stuck, to_status="activated")
    assert rescheduled.exists(), "the activated timeout rescheduled none of the stuck jobs"
