"""The job counts' folding thread ends when asked, with its connection, so that a benchmark can
drop its database on the way out."""

import pytest
from django.db import connection

from matcher.services.rollups import folder


@pytest.mark.django_db(transaction=True)
def test_the_folding_thread_ends_when_asked_and_leaves_no_session():
    folder.soon()
    thread = folder._thread
    assert thread is not None and thread.is_alive()
    folder.stop()
    assert not thread.is_alive()
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        assert cur.fetchone()[0] == 0
    folder.soon()  # and it starts again when there is more to fold
    assert folder._thread is not None and folder._thread.is_alive()
    folder.stop()
