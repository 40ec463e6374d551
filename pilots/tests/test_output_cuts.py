"""Outputs over the server's limit are cut by the pilot before they go up, never dropped whole
(pilots/client/outputs.py): stdout and stderr keep their head and tail, the files that fit
go, and the final report says what is missing."""

# ruff: noqa: F811  (the payload runner's fixtures, imported, are the tests' arguments)
from __future__ import annotations

import pytest

from pilots.client.payload import run_job
from pilots.client.sandbox import cut_copy, fit_outputs
from pilots.tests.test_payload_runner import (  # noqa: F401  (fixtures)
    REFERENCE,
    final,
    grid,
    logs,
    options,
    python,
    uploaded,
)

NOISY = """
import sys
for n in range(20000):
    print("out %05d" % n)
sys.stderr.write("err\\n" * 5000)
open("a.dat", "wb").write(b"a" * 3000)
open("b.dat", "wb").write(b"b" * 90000)
"""


def test_outputs_within_the_budget_are_all_kept_as_they_are():
    assert fit_outputs([("stdout", 10), ("stderr", 5)], [("a", 3)], 18) == (
        {"stdout": 10, "stderr": 5},
        [],
    )


@pytest.mark.parametrize("budget", [0, 1000, 50_000, 100_000, 10**6])
def test_cut_outputs_never_exceed_the_budget_and_files_that_fit_are_kept_whole(budget):
    streams, files = [("stdout", 400_000), ("stderr", 300)], [("a", 3000), ("b", 90_000)]
    keep, left_out = fit_outputs(streams, files, budget)

    kept_files = [size for name, size in files if name not in left_out]
    assert sum(keep.values()) + sum(kept_files) <= budget
    assert keep["stdout"] >= min(400_000, budget // 4)  # its share at least
    assert keep["stderr"] == (300 if budget >= 600 else 0)  # what is left comes back to it
    if 50_000 <= budget < 493_300:
        assert left_out == ["b"]  # a fits, b would take the streams' half
    if budget == 10**6:
        assert left_out == [] and keep == {"stdout": 400_000, "stderr": 300}


def test_a_cut_stream_keeps_its_head_and_tail_at_line_ends_with_a_mark_between(tmp_path):
    source = tmp_path / "std.out"
    source.write_bytes(b"".join(b"line %05d\n" % n for n in range(10000)))
    size = source.stat().st_size
    written = cut_copy(str(source), str(tmp_path / "cut"), size, 2000, "MaxOutputSandboxBytes")

    data = (tmp_path / "cut").read_bytes()
    assert len(data) == written <= 2000
    assert data.startswith(b"line 00000\n") and data.endswith(b"line 09999\n")
    head, rest = data.split(b"\n[", 1)
    mark, tail = rest.split(b"]\n", 1)
    assert head.endswith(b"\n") and tail.startswith(b"line ")  # whole lines on both sides
    cut = size - len(head) - len(tail)
    assert mark == (
        b"gridwms pilot: %d of this stream's %d bytes were cut here (over MaxOutputSandboxBytes)"
        % (cut, size)
    )


def test_a_payload_over_the_limit_uploads_what_fits_and_reports_what_was_cut(grid, options):
    run_job(grid.client, python(NOISY, output_sandbox=["*.dat"], max_output_bytes=40_000),
            REFERENCE, options)  # fmt: skip

    files = uploaded(grid)
    assert sum(len(data) for data in files.values()) <= 40_000
    stdout = files["stdout", "std.out"]
    assert stdout.startswith(b"out 00000\n") and stdout.endswith(b"out 19999\n")
    assert ("output", "a.dat") in files and ("output", "b.dat") not in files
    report = final(grid)
    assert report["reason"] == "exit code 0; output truncated"
    said = report["output_truncated"]
    assert said.startswith("over MaxOutputSandboxBytes (39.1 KiB): stdout std.out cut to its")
    assert "left out: b.dat (87.9 KiB)" in said


def test_a_413_naming_a_smaller_limit_is_answered_with_a_smaller_upload(grid, options):
    answers = iter([(413, {"output": ["over"], "limit": 20_000})])
    recorded = grid.answer

    def answer(kind, *args):
        if kind == "output":
            code, body = recorded(kind, *args)
            return next(answers, (code, body))
        return recorded(kind, *args)

    grid.answer = answer
    run_job(grid.client, python(NOISY, max_output_bytes=10**6), REFERENCE, options)

    first, second = grid.of("output")
    assert sum(len(p["data"]) for p in second["parts"] if p["filename"]) <= 20_000
    assert sum(len(p["data"]) for p in first["parts"] if p["filename"]) > 20_000
    assert final(grid)["output_truncated"].startswith("over MaxOutputSandboxBytes (19.5 KiB)")


def test_an_upload_refused_outright_flags_the_job_with_the_servers_words(grid, options):
    grid.output_answer = (413, {"output": ["200000 bytes; at most 1000"]})
    run_job(grid.client, python(NOISY), REFERENCE, options)

    report = final(grid)
    assert report["output_truncated"] == "output sandbox refused (413): 200000 bytes; at most 1000"
    assert report["reason"] == "exit code 0; output sandbox refused (413)"
