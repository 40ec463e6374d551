"""Claims in several processes while another folds the job counts over and over: every claim
is counted once, whether its delta was folded mid-way or is still waiting (the fold deletes
exactly the deltas it adds; a reader sees totals and deltas of one moment)."""

import random
import threading

import pytest
from django.db import connection

from tests.test_match_concurrency import _run
from tests.test_rollups_agree import assert_agree, table_counts

pytestmark = pytest.mark.django_db(transaction=True)


def test_claims_in_three_processes_beside_a_folding_loop_are_each_counted_once(world):
    from matcher import bulk, job_counts
    from matcher.services import rollups

    templates = bulk.make_templates(random.Random(4))
    for t in templates:
        t.requirements["pilot_types"] = []
    bulk.load_jobs(3_000, seed=4, batch_size=1_000, templates=templates)
    stop, folded, seen = threading.Event(), [], []

    def fold_and_read():
        try:
            while not stop.is_set():
                folded.append(rollups.fold(limit=50))  # small batches: many folds mid-claims
                total = sum(job_counts.counts(None, ("status",)).values())
                seen.append(total)
        finally:
            connection.close()

    folder = threading.Thread(target=fold_and_read)
    folder.start()
    try:
        claimed, _per_worker = _run(connection.settings_dict["NAME"], workers=3)
    finally:
        stop.set()
        folder.join(60)
    assert len(claimed) == len(set(claimed)) == 3_000
    assert sum(folded) > 0, "the loop folded nothing while the claims ran"
    assert set(seen) == {3_000}, "a reader saw a job counted twice or not at all"
    assert job_counts.counts(None, job_counts.KEYS) == table_counts()
    assert_agree("after the claims and the folds")
