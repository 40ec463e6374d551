"""What a job reports of its resources is its payload's, measured on its process tree, never
the pilot's own (pilots/client/usage.py)."""

# ruff: noqa: F811  (the payload runner's fixtures, imported, are the tests' arguments)
from __future__ import annotations

from pilots.client.payload import run_job
from pilots.client.usage import own_peak_kb
from pilots.tests.test_payload_runner import (  # noqa: F401  (fixtures)
    REFERENCE,
    a_job,
    described,
    final,
    grid,
    logs,
    options,
    python,
)

MIB_KB = 1024


def test_a_payload_holding_200_mib_reports_a_peak_memory_within_10_percent_of_it(grid, options):
    script = "import time; b = b'x' * (200 * 2**20); time.sleep(0.6)"
    run_job(grid.client, python(script), REFERENCE, options)

    peak = final(grid)["peak_memory_kb"]
    assert 200 * MIB_KB * 0.9 <= peak <= 200 * MIB_KB * 1.1, peak


def test_a_payload_that_allocates_and_ends_at_once_still_reports_its_peak(grid, options):
    run_job(grid.client, python("b = b'x' * (300 * 2**20)"), REFERENCE, options)

    peak = final(grid)["peak_memory_kb"]
    assert 300 * MIB_KB * 0.9 <= peak <= 300 * MIB_KB * 1.1, peak


def test_a_small_payload_reports_its_own_size_not_the_pilots(grid, options):
    ballast = b"p" * (150 * 2**20)  # the pilot (this process) is far bigger than the payload
    assert own_peak_kb() > 150 * MIB_KB
    run_job(
        grid.client,
        python("import time; b = b'x' * (20 * 2**20); time.sleep(0.6)"),
        REFERENCE,
        options,
    )
    del ballast

    peak = final(grid)["peak_memory_kb"]
    assert 20 * MIB_KB <= peak <= 50 * MIB_KB, peak


def test_the_cpu_time_reported_is_the_payloads_own(grid, options):
    script = """
import time
end = time.process_time() + 1.0
while time.process_time() < end:
    pass
time.sleep(0.5)
"""
    run_job(grid.client, python(script), REFERENCE, options)

    report = final(grid)
    assert 0.9 <= report["cpu_seconds"] <= 1.5, report
    assert report["wall_seconds"] >= 1.4


def test_a_file_the_system_cannot_execute_fails_the_job_with_126_before_anything_runs(
    grid, options
):
    grid.inputs = {"job.bin": b"\x00\x01 not a program"}
    job = a_job(
        executable="job.bin", input_sandbox=[described("job.bin", b"\x00\x01 not a program")]
    )
    run_job(grid.client, job, REFERENCE, options)

    report = final(grid)
    assert report["exit_code"] == 126 and report["status"] == "failed"
    assert report["reason"].startswith("executable not runnable: job.bin (Exec format error")


def test_a_payload_killed_by_a_signal_reports_128_plus_its_number(grid, options):
    run_job(
        grid.client,
        python("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"),
        REFERENCE,
        options,
    )

    report = final(grid)
    assert report["exit_code"] == 128 + 11 and report["reason"] == "exit code 139 (SIGSEGV)"
