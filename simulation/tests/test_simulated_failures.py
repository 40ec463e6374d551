"""Simulated failures an operator can diagnose: a simulated pilot that fails its job draws an
error from PanDA's pilot error codes (matcher.errors), with an exit code and a few log lines,
on a worker node it records; the error summary then has a row per code and category."""

import random
from collections import Counter

import pytest

from core import clock, gdpconfig
from core.cycles import run_cycle
from matcher import errors
from matcher.models import Job, JobStatus
from pilots.models import Pilot, PilotLogLine
from simulation import failures, simulated_ce
from web.monitoring import error_summary

pytestmark = pytest.mark.django_db


def test_the_drawn_failures_follow_the_weights_and_every_code_is_in_the_table():
    rng = random.Random(1)
    drawn = Counter(failures.draw(rng).code for _ in range(4000))
    assert {f.code for f in failures.FAILURES} <= set(errors.TABLE)
    assert set(drawn) == {f.code for f in failures.FAILURES}
    assert drawn[1305] > drawn[1186] * 3  # weight 22 against 3
    categories = {errors.TABLE[f.code].category for f in failures.FAILURES}
    assert {"stage-in", "payload", "memory", "wall time", "lost heartbeat"} <= categories


def test_a_failures_log_lines_name_the_job_its_file_and_its_worker_node():
    [stage_in] = [f for f in failures.FAILURES if f.code == 1099]
    lines = failures.log_lines(stage_in, 42, "wn001.cern.ch", "LCG.CERN.ch", 2000)
    assert lines[0] == "stage-in: copying EVNT.00000042._000001.pool.root.1 from CERN_DATADISK"
    assert len(lines) == 3 and "{" not in "".join(lines)


def test_simulated_failures_carry_distinct_codes_categories_logs_and_worker_nodes(submit):
    for _ in range(30):
        submit("alice", cpu_time=100, sites=["LCG.CERN.ch"])
    gdpconfig.set_value("PrivatePilotFraction", 0.0)
    gdpconfig.set_value("pilotsPerIteration", 40.0)
    gdpconfig.set_value(
        "SimulatedPilotSeconds",
        {"Submitted": 30, "Scheduled": 60, "Aborted": 0.0, "JobFailed": 1.0, "CPUScale": 0.5},
    )
    run_cycle("director")
    rng = random.Random(7)
    for _ in range(30):
        clock.advance(61)
        simulated_ce.simulated_ce_cycle(rng=rng)
        if Job.objects.filter(status=JobStatus.FAILED).count() >= 20:
            break

    failed = list(Job.objects.filter(status=JobStatus.FAILED))
    assert len(failed) >= 20
    assert all(j.error_code in errors.TABLE for j in failed)
    assert all(j.error_category == errors.TABLE[j.error_code].category for j in failed)
    assert len({j.error_category for j in failed}) >= 3
    assert all(j.hostname.startswith("wn") and j.hostname.endswith(".cern.ch") for j in failed)
    job = failed[0]
    assert job.status_reason == errors.TABLE[job.error_code].diag
    assert len(job.output_tail.splitlines()) >= 2  # the failure's log lines
    assert job.exit_code == next(f for f in failures.FAILURES if f.code == job.error_code).exit_code

    pilot = Pilot.objects.get(pk=job.pilot_id)
    assert pilot.hostname.startswith("wn") and pilot.node["cores"] in (8, 16, 32, 64)
    about = PilotLogLine.objects.filter(pilot=pilot, job_id=job.pk)
    assert about.filter(level="ERROR", message__contains=f"error {job.error_code}").exists()

    summary = error_summary.summary(job.owner, 24)
    assert len(summary.by_code) > 1 and len(summary.by_category) > 1
    assert sum(g.count for g in summary.by_code) == len(failed)
    assert summary.matrix.rows[0].site == "LCG.CERN.ch"
    assert summary.matrix.rows[0].total == len(failed)
