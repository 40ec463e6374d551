"""Child processes of the fault tests (spawned: each sets Django up on its own, against the
live test database). Hooks slow a process down at a chosen point so that the parent can
SIGKILL it there."""

import os
import random
import time

from django.db import connections, transaction


def child_django(db_name):
    import django
    from django.conf import settings

    django.setup()
    settings.DATABASES["default"]["NAME"] = db_name


def claim_and_hold(db_name, pilot, out, ready):
    """Claim one job inside a transaction, say which, and hold the transaction open (with the
    job's rows locked and moved to `sent`, uncommitted) until killed. Only the claim: the
    housekeeping that follows a claim (dropping a TaskQueue it emptied) runs in a transaction
    of its own after the claim committed, so it is left out here."""
    child_django(db_name)
    from matcher import dispatcher
    from matcher.dispatcher import match_job
    from matcher.matching import any_resource

    dispatcher._drop_quietly = lambda tq_ids: None

    with transaction.atomic():
        m = match_job(any_resource(), pilot)
        out.put(m.job.id if m else None)
        ready.set()
        time.sleep(600)


def claim_until_empty(db_name, pilot, out, hold_seconds=0.0, seed=None):
    """Claim jobs until none is left; with `hold_seconds`, each claim's transaction stays open
    a random while after the claim (a kill then lands inside it). Reports each claim as it
    commits."""
    child_django(db_name)
    from matcher.dispatcher import match_job
    from matcher.matching import any_resource

    rng = random.Random(seed)
    try:
        while True:
            with transaction.atomic():
                m = match_job(any_resource(), pilot)
                if hold_seconds:
                    time.sleep(rng.uniform(0, hold_seconds))
            if m is None:
                break
            out.put((pilot, m.job.id))
    finally:
        connections.close_all()
    out.put((pilot, None))


def run_cycle_slowed_at(db_name, kind, module, name, ready, seconds):
    """Run the cycle `kind`, with `module.name` wrapped to signal `ready` and sleep after
    doing its work: the process is killed there, mid-cycle."""
    child_django(db_name)
    import importlib

    from core.cycles import run_cycle

    mod = importlib.import_module(module)
    original = getattr(mod, name)

    def slowed(*args, **kwargs):
        result = original(*args, **kwargs)
        ready.set()
        time.sleep(seconds)
        return result

    setattr(mod, name, slowed)
    try:
        run_cycle(kind)
    finally:
        connections.close_all()


def run_cycle_slowly(db_name, kind, seconds, barrier, rounds, out):
    """Run the cycle `kind` `rounds` times after the barrier, its body slowed by `seconds`;
    reports each run's status."""
    child_django(db_name)
    from core import cycles

    original = cycles.CYCLES[kind]

    def slowed(**kwargs):
        time.sleep(seconds)
        return original(**kwargs)

    cycles.CYCLES[kind] = slowed
    try:
        barrier.wait(60)
        for _ in range(rounds):
            run = cycles.run_cycle(kind)
            out.put((os.getpid(), run.pk, run.status))
            time.sleep(random.uniform(0, seconds / 2))
    finally:
        connections.close_all()
