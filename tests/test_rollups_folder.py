"""The job counts' folding thread ends when asked, with its connection, so that a benchmark can
drop its database on the way out; asked while it waits to fold, it ends at once."""

import threading
import time

import pytest
from django.db import connection

from matcher.services import rollups
from matcher.services.rollups import folder


def _alive(pid: int) -> bool:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
        return cur.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_the_folding_thread_ends_when_asked_and_closes_its_session(monkeypatch):
    folded = threading.Event()
    pids = []
    real_fold = rollups.fold

    def fold_and_tell():
        from django.db import connection as own

        own.ensure_connection()
        pids.append(own.connection.info.backend_pid)
        real_fold()
        folded.set()

    monkeypatch.setattr(rollups, "fold", fold_and_tell)
    folder.soon()
    thread = folder._thread
    assert folded.wait(30), "the thread never folded"
    folder.stop()
    assert not thread.is_alive()
    deadline = time.monotonic() + 10  # the server ends a closed session a moment later
    while _alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pids[0])
    folder.soon()  # and it starts again when there is more to fold
    assert folder._thread is not None and folder._thread.is_alive()
    folder.stop()


@pytest.mark.django_db(transaction=True)
def test_a_stop_while_the_thread_waits_to_fold_ends_it_at_once():
    folder.soon()
    thread = folder._thread
    time.sleep(0.2)  # the thread is in its wait before folding
    folder.stop(timeout=30)
    assert not thread.is_alive()  # a stop lost in that wait would leave it waiting for good
