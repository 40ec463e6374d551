"""One table says how DIRAC and PanDA name each gridwms state (matcher/vocabularies.py)."""

import pytest

from matcher import lifecycle, vocabularies
from matcher.models import JobStatus


def test_every_gridwms_state_has_a_dirac_status_and_a_panda_name():
    assert set(vocabularies.DIRAC_STATUS) == set(lifecycle.STATES) == set(JobStatus.values)
    assert set(vocabularies.PANDA_STATUS) == set(lifecycle.STATES)
    assert {v for v, _ in vocabularies.DIRAC_STATUS.values()} <= set(vocabularies.DIRAC_STATUSES)


def test_a_dirac_status_stands_for_exactly_the_states_shown_as_it():
    for state in lifecycle.STATES:
        assert state in vocabularies.states_for_dirac_status(vocabularies.dirac_status(state))
    assert vocabularies.states_for_dirac_status("Waiting") == ("activated",)
    assert vocabularies.states_for_dirac_status("Running") == ("starting", "running")
    assert vocabularies.states_for_dirac_status("Stalled") == ()


def test_a_name_dirac_does_not_have_is_refused():
    with pytest.raises(ValueError, match="not a DIRAC job status"):
        vocabularies.states_for_dirac_status("waiting")


def test_final_gridwms_states_show_as_final_dirac_statuses():
    final = {"Done", "Failed", "Killed", "Deleted", "Completed"}
    for state in lifecycle.FINAL_STATES:
        assert vocabularies.dirac_status(state) in final


def test_a_reported_dirac_status_moves_a_job_only_to_a_state_gridwms_has():
    for target in vocabularies.DIRAC_REPORTED.values():
        assert target is None or target in lifecycle.STATES
