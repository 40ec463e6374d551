"""A claim statement that fails on the server (a statement or lock timeout, raised by psycopg's
own cursor, which Django does not wrap) gives that candidate up and the match goes on; a lost
connection is not swallowed as "no job" but reaches the pilot as a 503."""

import psycopg
import pytest

from matcher import claims, dispatcher
from matcher.matching import Resource

pytestmark = pytest.mark.django_db

CERN = Resource(site="LCG.CERN.ch", grid_ce="ce01.cern.ch", setup="any", cpu_time=1000)


class _FailingCursor:
    def __init__(self, error):
        self.error = error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, *args, **kwargs):
        raise self.error


def test_a_claim_statement_that_times_out_gives_the_candidate_up_without_an_error(
    submit, monkeypatch
):
    job = submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    timeout = psycopg.errors.QueryCanceled("canceling statement due to statement timeout")
    monkeypatch.setattr(claims, "_prepared_cursor", lambda: _FailingCursor(timeout))
    assert dispatcher.match_job(CERN, "pilot-1") is None
    monkeypatch.undo()
    assert dispatcher.match_job(CERN, "pilot-1").job.id == job.pk  # the job was not lost


def test_a_connection_ended_under_a_claim_is_raised_not_taken_for_no_job(submit, monkeypatch):
    submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    ended = psycopg.errors.AdminShutdown("terminating connection due to administrator command")
    monkeypatch.setattr(claims, "_prepared_cursor", lambda: _FailingCursor(ended))
    with pytest.raises(psycopg.errors.AdminShutdown):
        dispatcher.match_job(CERN, "pilot-1")
