"""The pilot runs a job's real payload (docs/user-guide.md, What a job runs): tested
on pilots/client alone against a small fake gridwms (http.server in a thread) that serves the
contract's pilot endpoints with canned answers and records everything it receives."""

from __future__ import annotations

import hashlib
import io
import json
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.management import call_command

from pilots.client.payload import Options, run_job
from pilots.client.sandbox import application_status, output_tail
from pilots.client.transport import Client

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "pilot://ce.test/abc"
JOB = re.compile(r"^/api/v1/jobs/(\d+)/(status|heartbeat|output|input)/(.*)$")


def parse_multipart(body: bytes, content_type: str) -> list[dict]:
    """The parts of a multipart/form-data body, checking its framing exactly."""
    boundary = content_type.split("boundary=", 1)[1].encode()
    sections = body.split(b"--" + boundary)
    assert sections[0] == b"" and sections[-1] == b"--\r\n"
    parts = []
    for section in sections[1:-1]:
        assert section.startswith(b"\r\n") and section.endswith(b"\r\n")
        head, _, data = section[2:-2].partition(b"\r\n\r\n")
        disposition = head.decode().split("\r\n")[0]
        fields = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', disposition))
        unescape = lambda s: re.sub(r"\\(.)", r"\1", s)  # noqa: E731
        parts.append(
            {
                "name": unescape(fields["name"]),
                "filename": unescape(fields["filename"]) if "filename" in fields else None,
                "data": data,
            }
        )
    return parts


class FakeGrid:
    """gridwms as the pilot sees it. `heartbeat_answer(n)` answers the n-th heartbeat (from 1);
    `status_answers[status]` answers the reports of that status in turn (then 200)."""

    def __init__(self):
        self.requests: list[dict] = []
        self.inputs: dict[str, bytes] = {}
        self.jobs: list[dict] = []  # what /match/ hands out, in turn
        self.heartbeat_answer = lambda n: (204, None)
        self.status_answers: dict[str, list[tuple[int, dict]]] = {}
        self.output_answer: tuple[int, dict] | None = None
        self.lock = threading.Lock()

    def of(self, kind: str) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r["kind"] == kind]

    def answer(self, kind: str, method: str, path: str, query: dict, body: bytes, ctype: str):
        record = {"kind": kind, "path": path, "query": query, "at": time.monotonic()}
        if kind == "output":
            record["parts"] = parse_multipart(body, ctype)
        elif body:
            record["body"] = json.loads(body)
        with self.lock:
            self.requests.append(record)
            count = len([r for r in self.requests if r["kind"] == kind])
        if kind == "heartbeat":
            return self.heartbeat_answer(count)
        if kind == "status":
            queue = self.status_answers.get(record["body"]["status"], [])
            return queue.pop(0) if queue else (200, {"status": record["body"]["status"]})
        if kind == "output":
            names = [{"name": p["filename"], "size": len(p["data"])} for p in record["parts"]]
            return self.output_answer or (200, {"files": [n for n in names if n["name"]]})
        if kind == "input":
            name = urllib.parse.unquote(path.rsplit("/", 1)[1])
            data = self.inputs.get(name)
            return (404, {"detail": "no such file"}) if data is None else (200, data)
        if kind == "register":
            return 201, {"id": 1}
        if kind == "match":
            return (200, self.jobs.pop(0)) if self.jobs else (204, None)
        return 200, {}


def _kind(path: str) -> str:
    match = JOB.match(path)
    if match:
        return match[2]
    return {"/api/v1/pilots/": "register", "/api/v1/match/": "match"}.get(path, "pilot-status")


@pytest.fixture
def grid():
    fake = FakeGrid()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self):
            url = urllib.parse.urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            assert self.headers["Authorization"] == "Token secret"
            query = urllib.parse.parse_qs(url.query)
            ctype = self.headers.get("Content-Type", "")
            code, answer = fake.answer(_kind(url.path), self.command, url.path, query, body, ctype)
            self.send_response(code)
            raw = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            if answer is None:
                raw = b""
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = _serve

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    fake.client = Client(fake.url, "secret", timeout=10, pause=0.05)
    yield fake
    server.shutdown()
    server.server_close()


def a_job(job_id: int = 7, **payload) -> dict:
    body = {
        "executable": sys.executable,
        "arguments": [],
        "environment": {},
        "output_sandbox": [],
        "input_sandbox": [],
        "stdout_name": "std.out",
        "stderr_name": "std.err",
        "wall_limit_seconds": 60,
    }
    return {"id": job_id, "cpu_time": 30, "payload": {**body, **payload}}


def python(script: str, **payload) -> dict:
    return a_job(arguments=["-u", "-c", textwrap.dedent(script)], **payload)


def described(name: str, data: bytes) -> dict:
    return {"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


@pytest.fixture
def logs() -> list[str]:
    return []


@pytest.fixture
def options(tmp_path, logs):
    work = tmp_path / "work"
    work.mkdir()
    return Options(workdir_root=str(work), heartbeat=0.3, kill_grace=0.5, log=logs.append)


def statuses(grid: FakeGrid) -> list[str]:
    return [r["body"]["status"] for r in grid.of("status")]


def final(grid: FakeGrid) -> dict:
    return grid.of("status")[-1]["body"]


def uploaded(grid: FakeGrid) -> dict[tuple[str, str], bytes]:
    (upload,) = grid.of("output")
    return {(p["name"], p["filename"]): p["data"] for p in upload["parts"] if p["filename"]}


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie waiting for its parent counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


JOB_SCRIPT = f"""#!{sys.executable}
import os, sys
lines = open("data.txt").read().split()
print("read", len(lines), "lines:", ",".join(lines))
print("HOME is the working directory:", os.environ["HOME"] == os.getcwd())
print("GREETING", os.environ.get("GREETING"), "ARGS", sys.argv[1:])
print("APPLICATION_STATUS: first stage", flush=True)
sys.stderr.write("a warning\\n")
os.makedirs("out", exist_ok=True)
with open("out/result.txt", "w") as f:
    f.write("sum=%d\\n" % sum(map(int, lines)))
block = b"x" * (40 * 1024 * 1024)
sum(i * i for i in range(300000))
print("APPLICATION_STATUS: counted %d lines" % len(lines))
sys.exit(3)
"""


def test_a_script_payload_reads_its_input_writes_its_output_and_its_exit_code_3_is_reported(
    grid, options, tmp_path
):
    grid.inputs = {"job.py": JOB_SCRIPT.encode(), "data.txt": b"1\n2\n3\n"}
    job = a_job(
        executable="job.py",  # the input sandbox's file, made executable by the pilot
        arguments=["two words", "$HOME", "*"],  # no shell: passed as they are
        environment={"GREETING": "hello"},
        input_sandbox=[described(n, d) for n, d in grid.inputs.items()],
        output_sandbox=["out/*.txt", "missing.dat"],
    )
    outcome = run_job(grid.client, job, REFERENCE, options)

    assert statuses(grid) == ["starting", "running", "finished"]
    report = final(grid)
    assert report["exit_code"] == 3 and not outcome.ok
    assert report["application_status"] == "counted 3 lines"
    assert report["hostname"] == socket.gethostname()
    assert report["cpu_seconds"] >= 0 and report["wall_seconds"] > 0
    assert report["peak_memory_kb"] > 30_000
    for request in grid.of("input"):
        assert request["query"] == {"pilot_reference": [REFERENCE]}
    files = uploaded(grid)
    stdout = files["stdout", "std.out"].decode()
    assert "read 3 lines: 1,2,3" in stdout
    assert "HOME is the working directory: True" in stdout
    assert "GREETING hello ARGS ['two words', '$HOME', '*']" in stdout
    assert files["stderr", "std.err"] == b"a warning\n"
    assert files["output", "out/result.txt"] == b"sum=6\n"
    assert set(files) == {
        ("stdout", "std.out"),
        ("stderr", "std.err"),
        ("output", "out/result.txt"),
    }
    (upload,) = grid.of("output")
    assert [p["data"] for p in upload["parts"] if p["name"] == "pilot_reference"] == [
        REFERENCE.encode()
    ]
    assert upload["at"] < grid.of("status")[-1]["at"]  # the outputs are staged before the end
    assert list((tmp_path / "work").iterdir()) == []  # the working directory is cleaned up


GRANDCHILD_SCRIPT = """
import signal, subprocess, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL stops it
child = subprocess.Popen(["sleep", "60"])
print("GRANDCHILD", child.pid, flush=True)
time.sleep(60)
"""


def test_a_payload_past_its_limit_is_killed_with_its_whole_process_group(grid, options):
    started = time.monotonic()
    run_job(grid.client, python(GRANDCHILD_SCRIPT, wall_limit_seconds=1), REFERENCE, options)

    assert time.monotonic() - started < 30  # long before the 60 s payload would end
    report = final(grid)
    assert report["status"] == "failed"
    assert report["reason"] == "killed: over its wall-clock limit of 1 s"
    assert report["exit_code"] == 128 + 9  # SIGTERM was ignored: SIGKILL after the grace
    stdout = uploaded(grid)["stdout", "std.out"].decode()
    grandchild = int(re.search(r"GRANDCHILD (\d+)", stdout)[1])
    deadline = time.monotonic() + 10
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(grandchild)


def test_a_payload_stopped_as_the_pilots_lifetime_ends_is_reported_a_pilot_failure(grid, options):
    options.deadline = time.monotonic() + 2
    outcome = run_job(grid.client, a_job(executable="sleep", arguments=["60"]), REFERENCE, options)

    report = final(grid)
    ended = re.fullmatch(
        r"pilot failure: the pilot's lifetime ended ([\d.]+) s .*", report["reason"]
    )
    assert report["status"] == "failed" and report["pilot_failure"] is True
    assert ended and float(ended[1]) <= 2 and outcome.pilot_failure
    assert "over its wall-clock limit" not in report["reason"]
    assert report["exit_code"] == 128 + 15  # sleep obeys SIGTERM
    assert not grid.of("output")  # nothing of an attempt that runs again elsewhere


TICKING_SCRIPT = """
import time
for n in range(600):
    print("tick", n, flush=True)
    time.sleep(0.1)
"""


def test_a_kill_command_in_a_heartbeat_answer_stops_the_payload_and_reports_it_cancelled(
    grid, options
):
    grid.heartbeat_answer = lambda n: (204, None) if n == 1 else (200, {"commands": ["kill"]})
    started = time.monotonic()
    outcome = run_job(grid.client, python(TICKING_SCRIPT), REFERENCE, options)

    assert time.monotonic() - started < 30
    beats = grid.of("heartbeat")
    assert len(beats) == 2  # stopped at the first heartbeat answered "kill"
    assert "tick" in beats[0]["body"]["output_tail"]
    assert beats[0]["body"]["pilot_reference"] == REFERENCE
    report = final(grid)
    assert report["status"] == "cancelled" and report["reason"] == "killed on request"
    assert report["exit_code"] == 128 + 15 and report["wall_seconds"] > 0
    assert outcome.status == "cancelled" and outcome.reported
    assert uploaded(grid)["stdout", "std.out"].startswith(b"tick 0\n")


ESCAPING_SCRIPT = """
import os
outside = os.environ["OUTSIDE"]
open("ok.txt", "w").write("mine")
os.makedirs("sub")
open("sub/inner.txt", "w").write("mine too")
os.symlink(os.path.join(outside, "secret.txt"), "link_out.txt")
os.symlink(outside, "linkdir")
os.symlink("ok.txt", "inner_link.txt")
"""


def test_output_patterns_never_bring_back_anything_outside_the_working_directory(
    grid, options, logs, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    patterns = [
        "../outside/secret.txt",
        str(outside / "secret.txt"),
        "sub/../ok.txt",
        "link_out.txt",
        "linkdir/*",
        "*.txt",
        "sub/*",
    ]
    job = python(ESCAPING_SCRIPT, environment={"OUTSIDE": str(outside)}, output_sandbox=patterns)
    run_job(grid.client, job, REFERENCE, options)

    files = uploaded(grid)
    outputs = {name for kind, name in files if kind == "output"}
    assert outputs == {"ok.txt", "inner_link.txt", "sub/inner.txt"}
    assert all(b"SECRET" not in data for data in files.values())
    assert final(grid)["exit_code"] == 0
    assert any("'link_out.txt' skipped" in line for line in logs)


@pytest.mark.parametrize("executable", ["no-such-program-xyz", "bin/../../../bin/true"])
def test_an_executable_that_is_not_found_fails_the_job_with_exit_code_127(
    grid, options, executable
):
    outcome = run_job(grid.client, a_job(executable=executable), REFERENCE, options)

    assert statuses(grid) == ["starting", "running", "failed"]
    report = final(grid)
    assert report["exit_code"] == 127
    assert report["reason"].startswith("executable not found: ")
    assert executable.split("/")[0] in report["reason"]
    assert b"executable not found" in uploaded(grid)["stderr", "std.err"]
    assert not outcome.ok


def test_an_input_file_that_does_not_match_its_checksum_fails_the_job_before_it_runs(grid, options):
    grid.inputs = {"data.txt": b"tampered"}
    sandbox = [{**described("data.txt", b"original"), "size": len(b"tampered")}]
    run_job(grid.client, a_job(executable="true", input_sandbox=sandbox), REFERENCE, options)

    assert statuses(grid) == ["starting", "failed"]
    assert final(grid)["reason"] == "input sandbox: data.txt: its sha256 is not the one expected"
    assert grid.of("output") == []


def test_an_upload_the_server_refuses_is_logged_and_the_job_is_still_reported(grid, options, logs):
    grid.output_answer = (413, {"output": ["the output sandbox is over 50 MiB"]})
    run_job(grid.client, a_job(executable="true"), REFERENCE, options)

    report = final(grid)
    assert report["status"] == "finished" and report["exit_code"] == 0
    assert "output sandbox refused (413)" in report["reason"]
    assert any("413" in line for line in logs)


def test_a_server_error_on_the_final_report_is_retried(grid, options):
    grid.status_answers["finished"] = [(503, {}), (502, {})]
    outcome = run_job(grid.client, a_job(executable="true"), REFERENCE, options)

    assert statuses(grid) == ["starting", "running", "finished", "finished", "finished"]
    assert outcome.reported and outcome.ok


def test_a_job_the_server_will_not_let_start_is_not_run(grid, options):
    grid.status_answers["starting"] = [(409, {"detail": "the job is cancelled"})]
    outcome = run_job(grid.client, a_job(executable="true"), REFERENCE, options)

    assert statuses(grid) == ["starting"]
    assert grid.of("output") == [] and not outcome.reported


def test_stdout_and_stderr_named_alike_are_one_file(grid, options):
    script = "import sys; print('out', flush=True); print('err', file=sys.stderr)"
    run_job(grid.client, python(script, stderr_name="std.out"), REFERENCE, options)

    assert uploaded(grid) == {("stdout", "std.out"): b"out\nerr\n"}


def test_the_output_tail_is_the_last_whole_lines_within_4096_bytes(tmp_path):
    path = tmp_path / "std.out"
    path.write_bytes(b"".join(b"line %d\n" % n for n in range(2000)) + b"bad \xff\xfe end\n")
    tail = output_tail(str(path))
    assert len(tail.encode()) <= 4096
    assert tail.startswith("line ") and tail.endswith("bad \ufffd\ufffd end\n")
    path.write_bytes(b"\xff" * 5000)  # each replaced byte takes 3 bytes once encoded
    assert len(output_tail(str(path)).encode()) <= 4096
    assert output_tail(str(tmp_path / "absent")) == ""


def test_the_application_status_is_stdouts_last_line_starting_with_the_marker(tmp_path):
    path = tmp_path / "std.out"
    path.write_bytes(
        b"APPLICATION_STATUS: staging\n"
        + b"x" * 200_000
        + b" APPLICATION_STATUS: not at a line start\n"
        + b"APPLICATION_STATUS:  merging  \nbye\n"
    )
    assert application_status(str(path)) == "merging"
    path.write_bytes(b"nothing\n")
    assert application_status(str(path)) is None
    path.write_bytes(b"APPLICATION_STATUS:" + b"y" * 1000)
    assert application_status(str(path)) == "y" * 255


def test_the_payload_machinery_imports_nothing_of_django():
    code = (
        "import sys, pilots.client.payload, pilots.client.transport, pilots.client.sandbox; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_pilot_command_runs_a_payload_and_still_sleeps_for_a_job_without_one(grid, tmp_path):
    grid.jobs = [
        a_job(1, executable="/bin/echo", arguments=["hello"]),
        {"id": 2, "cpu_time": 100, "payload": None},
    ]
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "pilot",
        url=grid.url,
        token="secret",
        site="LCG.Test.ch",
        max_seconds=60,
        cpu_scale=0.005,
        heartbeat=0.2,
        workdir=str(tmp_path),
        stdout=out,
        stderr=err,
    )

    assert "2 jobs done, 0 failed" in out.getvalue()
    (upload,) = grid.of("output")
    assert upload["path"] == "/api/v1/jobs/1/output/"
    assert uploaded(grid)["stdout", "std.out"] == b"hello\n"
    second = [r["body"] for r in grid.of("status") if r["path"] == "/api/v1/jobs/2/status/"]
    assert [b["status"] for b in second] == ["starting", "running", "finished"]
    assert second[-1] == {
        "pilot_reference": second[0]["pilot_reference"],
        "status": "finished",
        "reason": "payload done",
    }
    assert [r for r in grid.of("heartbeat") if r["path"] == "/api/v1/jobs/2/heartbeat/"]
    assert list(tmp_path.iterdir()) == []
