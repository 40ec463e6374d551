"""The `gridwms` command line (gridwms/cli/), run as a real process against a live server.

Each test runs the installed `gridwms` entry point (or `python -m gridwms.cli`) in a fresh
working directory and HOME, logged in as a demo user. A pilot's side, where a test needs one,
is played over the API by `Pilot` below (the contract's pilot requests) or by the real pilot
process (`manage.py pilot`).
"""

from __future__ import annotations

import ast
import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from matcher.models import Job
from simulation.demo import USER_PASSWORD

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.django_db(transaction=True)


COMMAND = Path(sys.executable).with_name("gridwms")  # the entry point `make install` makes


def _command() -> list[str]:
    return [str(COMMAND)] if COMMAND.exists() else [sys.executable, "-m", "gridwms.cli"]


WAITING_JOB = {"cpu_time": 100, "sites": ["LCG.CERN.ch"]}


class Gridwms:
    """Runs the command as `user`, each user with a credentials file of their own."""

    def __init__(self, tmp_path: Path, url: str):
        self.url = url
        self.home = tmp_path / "home"
        self.cwd = tmp_path / "work"
        self.home.mkdir()
        self.cwd.mkdir()

    def config(self, user: str) -> Path:
        return self.home / f"{user}.json"

    def env(self, user: str | None, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GRIDWMS_", "XDG_"))}
        env.update(HOME=str(self.home), NO_PROXY="*", no_proxy="*")
        if user:
            env["GRIDWMS_CONFIG"] = str(self.config(user))
        if not COMMAND.exists():  # not installed: the package from the checkout
            env["PYTHONPATH"] = str(ROOT)
        env.update(extra)
        return env

    def __call__(self, *args: str, user: str | None = "alice", stdin: str = "", env=None):
        return subprocess.run(
            [*_command(), *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.cwd,
            env=env or self.env(user),
            timeout=60,
        )

    def popen(self, *args: str, user: str = "alice") -> subprocess.Popen:
        return subprocess.Popen(
            [*_command(), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.cwd,
            env=self.env(user),
        )

    def login(self, user: str = "alice") -> None:
        out = self("login", "--url", self.url, "--user", user, "--password-stdin", user=user,
                   stdin=f"{USER_PASSWORD}\n")  # fmt: skip
        assert out.returncode == 0, out.stderr

    def write(self, name: str, content: str | bytes) -> Path:
        path = self.cwd / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return path

    def submit(self, job: dict | list, *extra: str, user: str = "alice") -> list[int]:
        self.write("job.json", json.dumps(job))
        out = self("submit", "job.json", *extra, user=user)
        assert out.returncode == 0, out.stderr
        return [int(line) for line in out.stdout.split()]


@pytest.fixture
def gridwms(tmp_path, live_server, users):
    return Gridwms(tmp_path, live_server.url)


@pytest.fixture
def alice(gridwms):
    gridwms.login("alice")
    return gridwms


class Pilot:
    """The generic pilot credential playing a pilot's side of the contract over the API: it
    takes a job at LCG.CERN.ch, reports on it, sends heartbeats and uploads outputs."""

    def __init__(self, users, reference: str = "cli-tests/1"):
        self.api = APIClient()
        self.api.force_authenticate(users["pilot"])
        self.reference = reference

    def take(self) -> dict:
        resource = {
            "site": "LCG.CERN.ch",
            "grid_ce": "ce504.cern.ch",
            "cpu_time": 86400,
            "platform": ["x86_64-el9"],
            "pilot_reference": self.reference,
        }
        deadline = time.monotonic() + 15  # a new TaskQueue reaches the match view within 1 s
        while time.monotonic() < deadline:
            answer = self.api.post("/api/v1/match/", resource, format="json")
            if answer.status_code == 200:
                return answer.json()
            assert answer.status_code == 204, answer.content
            time.sleep(0.3)
        raise AssertionError("no job was matched")

    def report(self, job: int, status: str, **extra) -> None:
        body = {"pilot_reference": self.reference, "status": status, **extra}
        answer = self.api.post(f"/api/v1/jobs/{job}/status/", body, format="json")
        assert answer.status_code == 200, answer.content

    def heartbeat(self, job: int, output_tail: str) -> None:
        body = {"pilot_reference": self.reference, "output_tail": output_tail}
        answer = self.api.post(f"/api/v1/jobs/{job}/heartbeat/", body, format="json")
        assert answer.status_code in (200, 204), answer.content

    def upload(self, job: int, stdout: bytes, stderr: bytes, outputs: dict[str, bytes]) -> None:
        form = {
            "pilot_reference": self.reference,
            "stdout": SimpleUploadedFile("std.out", stdout),
            "stderr": SimpleUploadedFile("std.err", stderr),
            "output": [SimpleUploadedFile(name, data) for name, data in outputs.items()],
        }
        answer = self.api.post(f"/api/v1/jobs/{job}/output/", form, format="multipart")
        assert answer.status_code == 200, answer.content

    def run(self, job: int, stdout: bytes, stderr: bytes = b"", outputs=None, exit_code=0):
        """The job runs, its outputs come back, it ends with `exit_code`."""
        self.report(job, "running")
        self.upload(job, stdout, stderr, outputs or {})
        self.report(job, "finished", exit_code=exit_code)


def _rows(table: str) -> list[list[str]]:
    """The table's lines below its header, split into columns (names here have no spaces)."""
    lines = table.strip().splitlines()
    assert lines[0].split() == ["ID", "NAME", "STATUS", "SITE", "REASON", "CHANGED"]
    return [line.split() for line in lines[1:]]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the command itself ---------------------------------------------------------------------------


def test_the_command_imports_only_the_standard_library_and_itself():
    for path in sorted((ROOT / "gridwms" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or name.startswith("gridwms.cli"), (
                    f"{path.name} imports {name}"
                )


def test_the_command_runs_outside_the_checkout_without_django(tmp_path):
    probe = (
        "import sys, gridwms.cli; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('django', 'rest_framework', 'config', 'matcher', 'shares', 'pilots')))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    if not COMMAND.exists():
        env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_help_lists_every_command_and_no_command_is_bad_usage(gridwms):
    out = gridwms("--help", user=None)
    assert out.returncode == 0
    for command in ("login", "submit", "status", "jobs", "log", "get", "kill", "reschedule"):
        assert command in out.stdout
    assert gridwms(user=None).returncode == 2
    assert gridwms("status", "abc").returncode == 2


def test_output_file_names_never_lead_outside_the_directory(tmp_path):
    from gridwms.cli.files import prepare, safe_parts, unique

    assert safe_parts("../../etc/passwd") == ["etc", "passwd"]
    assert safe_parts("/abs/./x\\..\\y") == ["abs", "x", "y"]
    assert safe_parts("a\x00b\nc") == ["abc"]
    assert safe_parts("..") == safe_parts("") == []
    assert len(safe_parts("é" * 300)[0].encode()) <= 255
    taken: set[str] = set()
    assert [unique(p, taken) for p in (["r.txt"], ["R.txt"], ["r.txt"], [".rc"], [".rc"])] == [
        ["r.txt"], ["R_2.txt"], ["r_3.txt"], [".rc"], [".rc_2"]
    ]  # fmt: skip
    root = tmp_path / "out"
    root.mkdir()
    assert prepare(root, ["sub", "f.txt"]) == root / "sub" / "f.txt"
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(Exception, match="in the way"):
        prepare(root, ["link", "f.txt"])


def test_following_a_log_prints_each_line_once_as_its_window_slides():
    from gridwms.cli.files import LogFollower

    follower = LogFollower()
    assert follower.new_lines("a\nb\n", final=False) == ["a", "b"]
    assert follower.new_lines("a\nb\nc\npar", final=False) == ["c"]
    assert follower.new_lines("b\nc\npartial\nx\nx\n", final=False) == ["partial", "x", "x"]
    assert follower.new_lines("x\nx\nx\n", final=False) == ["x"]
    # The whole stream at the end: only what follows the lines shown, the last one unended.
    assert follower.new_lines("a\nb\nc\npartial\nx\nx\nx\ny\nz", final=True) == ["y", "z"]
    assert LogFollower().new_lines("", final=True) == []


# --- login and credentials -----------------------------------------------------------------------


def test_login_stores_the_url_and_token_in_a_file_only_its_owner_may_read(gridwms, users):
    env = gridwms.env(None)  # the default place: ~/.config/gridwms/credentials.json
    out = gridwms("login", "--url", gridwms.url + "/", "--user", "alice", "--password-stdin",
                  stdin=f"{USER_PASSWORD}\n", env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    path = gridwms.home / ".config" / "gridwms" / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    stored = json.loads(path.read_text())
    token = Token.objects.get(user=users["alice"]).key
    assert stored == {"url": gridwms.url, "user": "alice", "token": token}
    assert token not in out.stdout + out.stderr
    # The stored token is what the next command uses.
    out = gridwms("jobs", env=env)
    assert (out.returncode, out.stderr) == (0, "gridwms: no jobs match\n")


def test_a_wrong_password_exits_2_saying_why_and_stores_nothing(gridwms):
    out = gridwms("login", "--url", gridwms.url, "--user", "alice", "--password-stdin",
                  stdin="not-the-password\n")  # fmt: skip
    assert out.returncode == 2
    assert "refused the user name or password" in out.stderr
    assert "run `gridwms login`" not in out.stderr  # it is what they just ran
    assert "Traceback" not in out.stderr
    assert not gridwms.config("alice").exists()


def test_a_command_without_credentials_exits_2_asking_to_log_in(gridwms):
    out = gridwms("jobs")
    assert out.returncode == 2
    assert "gridwms login" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_GRIDWMS_URL_and_GRIDWMS_TOKEN_need_no_credentials_file(gridwms, users):
    token = Token.objects.get(user=users["bob"]).key
    env = gridwms.env(None, GRIDWMS_URL=gridwms.url, GRIDWMS_TOKEN=token)
    gridwms.write("job.json", json.dumps({"name": "bobs", **WAITING_JOB}))
    out = gridwms("submit", "job.json", env=env)
    assert out.returncode == 0, out.stderr
    assert Job.objects.get(pk=int(out.stdout)).owner.username == "bob"


def test_a_stored_token_is_never_sent_to_another_server(alice):
    env = alice.env("alice", GRIDWMS_URL=f"http://127.0.0.1:{_closed_port()}")
    out = alice("jobs", env=env)
    assert out.returncode == 2
    assert "not logged in to http://127.0.0.1:" in out.stderr


def test_a_server_that_cannot_be_reached_exits_1_in_one_line(gridwms):
    env = gridwms.env(None, GRIDWMS_URL=f"http://127.0.0.1:{_closed_port()}", GRIDWMS_TOKEN="x")
    out = gridwms("jobs", env=env)
    assert out.returncode == 1
    assert out.stderr.startswith("gridwms: cannot reach http://127.0.0.1:")
    assert len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr


def test_a_refused_token_exits_2_asking_to_log_in_again(gridwms):
    env = gridwms.env(None, GRIDWMS_URL=gridwms.url, GRIDWMS_TOKEN="0" * 40)
    out = gridwms("jobs", env=env)
    assert out.returncode == 2
    assert "gridwms login" in out.stderr


# --- submit --------------------------------------------------------------------------------------


def test_submitting_a_json_job_prints_its_id_and_the_job_is_the_users(alice):
    [job_id] = alice.submit({"name": "cli-one", **WAITING_JOB})
    job = Job.objects.get(pk=job_id)
    assert (job.owner.username, job.name, job.cpu_time, job.status) == (
        "alice",
        "cli-one",
        100,
        "activated",
    )


def test_submitting_a_list_prints_one_id_a_line_and_json_prints_the_answer(alice):
    ids = alice.submit([{"name": f"many-{i}", **WAITING_JOB} for i in range(3)])
    assert sorted(Job.objects.filter(owner__username="alice").values_list("pk", flat=True)) == (
        sorted(ids)
    )
    alice.write("one.json", json.dumps({"name": "as-json", **WAITING_JOB}))
    out = alice("submit", "one.json", "--json")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["status"] == "activated"
    assert Job.objects.get(pk=answer["id"]).name == "as-json"


def test_a_job_read_from_standard_input_is_submitted(alice):
    out = alice("submit", "-", stdin=json.dumps({"name": "piped", **WAITING_JOB}))
    assert out.returncode == 0, out.stderr
    assert Job.objects.get(pk=int(out.stdout)).name == "piped"


def test_a_bad_field_exits_2_with_the_servers_message_naming_it_and_stores_nothing(alice):
    alice.write("bad.json", json.dumps({"cpu_time": "soon", "sites": ["Nowhere.xx"], "hue": 1}))
    out = alice("submit", "bad.json")
    assert out.returncode == 2
    message = out.stderr.strip()
    assert len(message.splitlines()) == 1
    for field in ("cpu_time", "sites", "hue"):
        assert f"{field}:" in message
    assert "Nowhere.xx" in message
    assert not Job.objects.exists()


def test_a_bad_job_in_a_list_is_named_by_its_position(alice):
    alice.write("bad.json", json.dumps([WAITING_JOB, {"cpu_time": -1}]))
    out = alice("submit", "bad.json")
    assert out.returncode == 2
    assert "[1].cpu_time:" in out.stderr
    assert not Job.objects.exists()


def test_a_file_that_is_not_json_or_not_there_exits_2_before_anything_is_sent(alice):
    alice.write("broken.json", '{"cpu_time": 100,')
    out = alice("submit", "broken.json")
    assert out.returncode == 2
    assert "broken.json: not valid JSON" in out.stderr
    out = alice("submit", "missing.json")
    assert out.returncode == 2
    assert "missing.json" in out.stderr
    alice.write("job.json", json.dumps(WAITING_JOB))
    out = alice("submit", "job.json", "--sandbox", "nowhere.txt")
    assert out.returncode == 2
    assert "nowhere.txt: not a readable file" in out.stderr
    assert not Job.objects.exists()


# --- status and jobs -----------------------------------------------------------------------------


def test_status_shows_a_row_per_job_and_names_the_ones_not_found(alice, submit):
    ids = alice.submit([{"name": "first", **WAITING_JOB}, {"name": "second", **WAITING_JOB}])
    bobs = submit("bob", name="bobs", cpu_time=100)
    out = alice("status", *map(str, ids), str(bobs.pk), "999999")
    assert out.returncode == 2
    rows = _rows(out.stdout)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (str(ids[0]), "first", "activated"),
        (str(ids[1]), "second", "activated"),
    ]
    assert f"job {bobs.pk}:" in out.stderr and "job 999999:" in out.stderr
    out = alice("status", str(ids[0]), "--json")
    assert out.returncode == 0
    [job] = json.loads(out.stdout)
    assert (job["id"], job["owner"], job["name"]) == (ids[0], "alice", "first")


def test_jobs_lists_the_users_jobs_newest_first_filtered_by_status_site_and_name(alice, submit):
    ids = alice.submit(
        [
            {"name": "alpha-1", **WAITING_JOB},
            {"name": "alpha-2", "cpu_time": 100, "sites": ["LCG.PIC.es"]},
            {"name": "beta-1", **WAITING_JOB},
        ]
    )
    submit("bob", name="bobs", cpu_time=100)
    assert alice("kill", str(ids[2])).returncode == 0
    rows = _rows(alice("jobs").stdout)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (str(ids[2]), "beta-1", "cancelled"),
        (str(ids[1]), "alpha-2", "activated"),
        (str(ids[0]), "alpha-1", "activated"),
    ]
    assert [r[1] for r in _rows(alice("jobs", "--status", "cancelled").stdout)] == ["beta-1"]
    both = alice("jobs", "--status", "activated,cancelled", "--site", "LCG.CERN.ch")
    assert [r[1] for r in _rows(both.stdout)] == ["beta-1", "alpha-1"]
    assert [r[1] for r in _rows(alice("jobs", "--name", "ALPHA").stdout)] == ["alpha-2", "alpha-1"]
    assert [r[1] for r in _rows(alice("jobs", "--limit", "1").stdout)] == ["beta-1"]
    none = alice("jobs", "--name", "gamma")
    assert (none.returncode, none.stdout) == (0, "")


def test_jobs_json_follows_the_lists_pages(alice):
    from gridwms.cli.jobs import PAGE_SIZE

    ids = alice.submit([{"name": f"bulk-{i}", **WAITING_JOB} for i in range(PAGE_SIZE + 30)])
    out = alice("jobs", "--json", "--limit", "0")
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    assert [job["id"] for job in listed] == sorted(ids, reverse=True)
    out = alice("jobs", "--json", "--limit", "0", "--name", "bulk-22")
    assert {job["name"] for job in json.loads(out.stdout)} == {"bulk-22"} | {
        f"bulk-22{i}" for i in range(10)
    }


def test_an_unknown_status_exits_2_naming_the_filter(alice):
    out = alice("jobs", "--status", "sleeping")
    assert out.returncode == 2
    assert "status:" in out.stderr


# --- kill and reschedule -------------------------------------------------------------------------


def test_kill_cancels_the_job_and_killing_it_again_exits_2_with_the_reason(alice):
    [job_id] = alice.submit(WAITING_JOB)
    out = alice("kill", str(job_id))
    assert (out.returncode, out.stdout.strip()) == (0, f"job {job_id} killed: cancelled")
    assert Job.objects.get(pk=job_id).status == "cancelled"
    again = alice("kill", str(job_id))
    assert again.returncode == 2
    assert f"job {job_id} cannot be killed" in again.stderr


def test_another_users_job_cannot_be_killed(alice, submit):
    bobs = submit("bob", cpu_time=100)
    out = alice("kill", str(bobs.pk))
    assert out.returncode == 2
    assert Job.objects.get(pk=bobs.pk).status == "activated"


def test_reschedule_sends_a_failed_job_back_to_wait_and_refuses_a_waiting_one(alice, users):
    [job_id] = alice.submit(WAITING_JOB)
    out = alice("reschedule", str(job_id))
    assert out.returncode == 2
    assert f"job {job_id} cannot be rescheduled" in out.stderr
    pilot = Pilot(users)
    assert pilot.take()["id"] == job_id
    pilot.report(job_id, "running")
    pilot.report(job_id, "failed", reason="disk full")
    out = alice("reschedule", str(job_id))
    assert (out.returncode, out.stdout.strip()) == (0, f"job {job_id} rescheduled: activated")
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.reschedule_count) == ("activated", 1)


# --- input sandboxes, JDL text ------------------------------------------------------------------

SANDBOX_BYTES = bytes(range(256)) * 3 + b"\r\n--gridwms-boundary\r\n" + b"\x00" * 10


def test_input_sandbox_files_go_with_a_json_job_byte_for_byte(alice, users):
    alice.write("data.txt", "hello from the sandbox\n")
    alice.write("blob.bin", SANDBOX_BYTES)
    job = {"executable": "/bin/cat", "arguments": ["data.txt"], **WAITING_JOB}
    [job_id] = alice.submit(job, "--sandbox", "data.txt", "blob.bin")
    detail = json.loads(alice("status", str(job_id), "--json").stdout)[0]
    assert detail["executable"] == "/bin/cat"
    names = {f["name"]: f["size"] for f in detail["input_sandbox"]}
    assert names == {"data.txt": 23, "blob.bin": len(SANDBOX_BYTES)}
    pilot = Pilot(users)
    matched = pilot.take()
    assert matched["id"] == job_id
    url = f"/api/v1/jobs/{job_id}/input/blob.bin"
    got = pilot.api.get(url, {"pilot_reference": pilot.reference})
    assert got.status_code == 200
    assert b"".join(got.streaming_content if got.streaming else [got.content]) == SANDBOX_BYTES


def test_a_jdl_with_input_sandbox_files_is_submitted_with_them(alice):
    alice.write("data.txt", "jdl sandbox\n")
    alice.write(
        "job.jdl",
        '[\n  JobName = "jdl-sandbox";\n  Executable = "/bin/cat";\n  Arguments = "data.txt";\n'
        '  InputSandbox = {"data.txt"};\n  CPUTime = 100;\n  Site = "LCG.CERN.ch";\n]\n',
    )
    out = alice("submit", "job.jdl", "--sandbox", "data.txt")
    assert out.returncode == 0, out.stderr
    [job] = json.loads(alice("status", out.stdout.strip(), "--json").stdout)
    assert (job["name"], job["owner"], job["executable"]) == ("jdl-sandbox", "alice", "/bin/cat")
    assert [f["name"] for f in job["input_sandbox"]] == ["data.txt"]


def test_a_list_of_jobs_cannot_take_input_sandbox_files(alice):
    alice.write("data.txt", "x")
    alice.write("jobs.json", json.dumps([WAITING_JOB, WAITING_JOB]))
    out = alice("submit", "jobs.json", "--sandbox", "data.txt")
    assert out.returncode == 2
    assert "one job" in out.stderr
    assert not Job.objects.exists()


def test_a_jdl_text_is_submitted_as_it_is(alice):
    alice.write(
        "hello.jdl",
        '[ JobName = "jdl-text"; Executable = "/bin/echo"; Arguments = "hello world";\n'
        '  CPUTime = 100; Site = "LCG.CERN.ch"; ]\n',
    )
    out = alice("submit", "hello.jdl")
    assert out.returncode == 0, out.stderr
    [job] = json.loads(alice("status", out.stdout.strip(), "--json").stdout)
    assert (job["name"], job["owner"], job["executable"]) == ("jdl-text", "alice", "/bin/echo")
    assert job["arguments"] == ["hello", "world"]


def test_a_non_string_argument_exits_2_naming_arguments(alice):
    alice.write("bad.json", json.dumps({"executable": "/bin/echo", "arguments": ["ok", 3],
                                        **WAITING_JOB}))  # fmt: skip
    out = alice("submit", "bad.json")
    assert out.returncode == 2
    assert "arguments:" in out.stderr
    assert not Job.objects.exists()


# --- logs and output sandboxes ------------------------------------------------------------------


def _finished_job(alice, users, outputs=None, exit_code=0) -> int:
    [job_id] = alice.submit({"executable": "/bin/sh", "arguments": ["run.sh"], **WAITING_JOB})
    pilot = Pilot(users)
    assert pilot.take()["id"] == job_id
    pilot.run(job_id, b"one\ntwo\nthree\n", b"oops\n", outputs, exit_code)
    return job_id


def test_log_prints_the_jobs_stdout_or_stderr_whole_or_its_tail(alice, users):
    job_id = _finished_job(alice, users)
    assert alice("log", str(job_id)).stdout == "one\ntwo\nthree\n"
    assert alice("log", str(job_id), "--tail", "2").stdout == "two\nthree\n"
    assert alice("log", str(job_id), "--stderr").stdout == "oops\n"


def test_log_follow_prints_each_line_once_until_the_job_ends(alice, users):
    [job_id] = alice.submit({"executable": "/bin/sh", "arguments": ["run.sh"], **WAITING_JOB})
    pilot = Pilot(users)
    assert pilot.take()["id"] == job_id
    pilot.report(job_id, "running")
    pilot.heartbeat(job_id, "a\nb\n")
    follower = alice.popen("log", str(job_id), "--follow", "--interval", "0.2")
    try:
        time.sleep(1.5)
        pilot.heartbeat(job_id, "a\nb\nc\npart")  # a line still being written
        time.sleep(1.5)
        pilot.heartbeat(job_id, "b\nc\npartial line\n")  # the window slid
        time.sleep(1.5)
        assert follower.poll() is None  # still following a running job
        pilot.upload(job_id, b"a\nb\nc\npartial line\nd\n", b"", {})
        pilot.report(job_id, "finished", exit_code=0)
        out, err = follower.communicate(timeout=30)
    finally:
        follower.kill()
    assert follower.returncode == 0, err
    assert out == "a\nb\nc\npartial line\nd\n"


def test_get_downloads_the_output_sandbox_into_the_jobs_directory(alice, users):
    outputs = {"result.txt": b"42\n", "table.bin": SANDBOX_BYTES}
    job_id = _finished_job(alice, users, outputs)
    out = alice("get", str(job_id))
    assert out.returncode == 0, out.stderr
    where = alice.cwd / f"job_{job_id}"
    assert {p.name: p.read_bytes() for p in where.iterdir()} == {
        "std.out": b"one\ntwo\nthree\n",
        "std.err": b"oops\n",
        **outputs,
    }
    out = alice("get", str(job_id), "--dir", "elsewhere")
    assert out.returncode == 0, out.stderr
    assert (alice.cwd / "elsewhere" / "table.bin").read_bytes() == SANDBOX_BYTES


def test_another_user_gets_neither_the_log_nor_the_outputs(alice, users):
    job_id = _finished_job(alice, users, {"result.txt": b"42\n"})
    alice.login("bob")
    for command in (["log", str(job_id)], ["get", str(job_id)]):
        out = alice(*command, user="bob")
        assert out.returncode == 2, command
        assert out.stdout == ""
        assert out.stderr.startswith(f"gridwms: job {job_id}: ")
    assert not (alice.cwd / f"job_{job_id}").exists()


def test_a_real_pilot_runs_the_payload_and_its_outputs_reach_the_owner_only(alice, users):
    alice.write("data.txt", "the input\n")
    alice.write(
        "script.py",
        "import sys\n"
        "print(open('data.txt').read().strip().upper())\n"
        "print('to stderr', file=sys.stderr)\n"
        "open('result.txt', 'w').write('42\\n')\n"
        "sys.exit(3)\n",
    )
    job = {
        "executable": sys.executable,
        "arguments": ["script.py"],
        "output_sandbox": ["result.txt"],
        **WAITING_JOB,
    }
    [job_id] = alice.submit(job, "--sandbox", "script.py", "data.txt")
    token = Token.objects.get(user=users["pilot"]).key
    subprocess.run(
        [sys.executable, "manage.py", "pilot", "--url", alice.url, "--token", token,
         "--site", "LCG.CERN.ch", "--ce", "ce504.cern.ch", "--max-seconds", "600"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    detail = json.loads(alice("status", str(job_id), "--json").stdout)[0]
    assert (detail["status"], detail["exit_code"]) == ("failed", 3)
    assert alice("log", str(job_id)).stdout == "THE INPUT\n"
    assert alice("log", str(job_id), "--stderr").stdout == "to stderr\n"
    assert alice("get", str(job_id)).returncode == 0
    assert (alice.cwd / f"job_{job_id}" / "result.txt").read_text() == "42\n"
    alice.login("bob")
    assert alice("get", str(job_id), "--dir", "bobs", user="bob").returncode == 2


def _pilot_process(url: str, token: str, *extra: str) -> list[str]:
    return [sys.executable, "manage.py", "pilot", "--url", url, "--token", token,
            "--site", "LCG.CERN.ch", "--ce", "ce504.cern.ch", "--max-jobs", "1",
            "--heartbeat", "1", *extra]  # fmt: skip


def _status(alice, job_id: int) -> dict:
    out = alice("status", str(job_id), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)[0]


def test_a_payload_past_its_limit_is_killed_and_its_job_fails_saying_so(alice, users):
    # CPU time 2 s x PayloadWallFactor 2: a 4 s wall-clock limit for a payload of 120 s.
    sleeper = "import time; print('sleeping', flush=True); time.sleep(120)"
    job = {"executable": sys.executable, "arguments": ["-c", sleeper], **WAITING_JOB}
    [job_id] = alice.submit({**job, "cpu_time": 2})
    token = Token.objects.get(user=users["pilot"]).key
    subprocess.run(_pilot_process(alice.url, token, "--max-seconds", "600"),
                   cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    detail = _status(alice, job_id)
    assert detail["status"] == "failed"
    assert detail["status_reason"].startswith("killed: over its wall-clock limit of 4 s")
    assert alice("log", str(job_id)).stdout == "sleeping\n"


def test_a_running_payload_killed_by_its_owner_stops_at_the_next_heartbeat(alice, users):
    pid_file = alice.cwd / "payload.pid"
    sleeper = (
        "import os, time; open(os.environ['PID_FILE'], 'w').write(str(os.getpid())); "
        "print('working', flush=True); time.sleep(300)"
    )
    job = {
        "executable": sys.executable,
        "arguments": ["-c", sleeper],
        "environment": {"PID_FILE": str(pid_file)},
        **WAITING_JOB,
    }
    [job_id] = alice.submit(job)
    token = Token.objects.get(user=users["pilot"]).key
    pilot = subprocess.Popen(_pilot_process(alice.url, token, "--max-seconds", "600"), cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            assert pilot.poll() is None, pilot.communicate()
            time.sleep(0.2)
        payload_pid = int(pid_file.read_text())
        assert _status(alice, job_id)["status"] == "running"
        out = alice("kill", str(job_id))
        assert out.returncode == 0, out.stderr
        killed = _status(alice, job_id)
        assert (killed["status"], killed["kill_requested"]) == ("cancelled", True)
        # The pilot hears it in the answer to its next heartbeat (every second), stops the
        # payload's process group, reports and, its one job done, ends.
        _, err = pilot.communicate(timeout=60)
    finally:
        if pilot.poll() is None:
            pilot.kill()
    assert f"job {job_id}: cancelled (killed on request)\n" in err  # its outputs taken too
    with pytest.raises(ProcessLookupError):
        os.kill(payload_pid, 0)
    after = _status(alice, job_id)
    assert (after["status"], after["kill_requested"]) == ("cancelled", False)
    assert alice("log", str(job_id)).stdout == "working\n"
    assert alice("get", str(job_id)).returncode == 0
    assert (alice.cwd / f"job_{job_id}" / "std.out").read_text() == "working\n"
