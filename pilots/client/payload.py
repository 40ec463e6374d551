"""One job's payload, from the match answer's `payload` to the job's final status report
(docs/user-guide.md, What a job runs). Standard library only: this runs on a worker node.

1. Report `starting`; make a fresh working directory (`tempfile.mkdtemp` under the pilot's
   `--workdir`, mode 0700); download each input sandbox file into it and check its size and
   sha256. A file that cannot be had fails the job before anything runs.
2. Report `running`; run the executable with its arguments (no shell) in the working directory,
   in a session and process group of its own, with the pilot's minimal environment (PATH,
   HOME = the working directory, LANG) under the job's; stdout and stderr go to the files
   `stdout_name` and `stderr_name` there (one file when both name the same).
3. While it runs, a heartbeat every `heartbeat` seconds carries the last lines of stdout
   (`sandbox.output_tail`). A heartbeat answered `{"commands": ["kill"]}` stops the payload, and
   the job is reported `cancelled`, "killed on request". Past its wall-clock limit
   (min(`wall_limit_seconds`, the pilot's time left)) it is stopped too, and the job is reported
   `failed`, "killed: over its wall-clock limit of N s"; when the pilot's time left was the
   lesser, the pilot failed, not the job: it is reported `failed` with `pilot_failure` and
   LIFETIME_ENDED as its reason, nothing uploaded (the server reschedules it). Stopping is
   SIGTERM to the whole group, then SIGKILL after a short grace.
4. When the payload's main process ends, whatever it left running in its process group is
   killed (nothing of a job outlives it on the node; a process that made itself a new session
   escapes this). Then the output sandbox (stdout, stderr, the files the `output_sandbox`
   patterns match inside the working directory, see `sandbox.output_files`) is uploaded as one
   streamed multipart POST, cut to the server's limit when over it (`outputs`), and the final
   status is reported with `exit_code`, `error_code` (stage-in or wall-time failures the pilot
   knows of: logbook's PanDA codes), `application_status` (the convention is in `sandbox`'s
   docstring), `cpu_seconds`, `wall_seconds`, `peak_memory_kb`, `hostname` and, when anything
   was cut or left out or the upload failed, `output_truncated` saying what ("output
   truncated" or the upload's failure in the reason too); the job is reported all the same.

The executable: an absolute path; a relative path with a `/`, inside the working directory; or a
bare name: the working directory's file of that name if there is one (an input sandbox file,
made executable for its owner, as DIRAC does), else the command found on the payload's PATH.
Not found: the job fails with exit code 127; found but not runnable: 126. Either way the reason
is written to the stderr file as well, so the user reads it there too.

Exit codes: a payload ended by a signal reports 128 + the signal's number (the shell's way).
CPU time and peak memory are the payload's: `launcher` (which starts it) says why and how,
and its process group is sampled from /proc while it runs too (`usage`).
"""

from __future__ import annotations

import errno
import hashlib
import math
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field

from .launcher import Launched
from .logbook import REACHED_MAX_TIME, STAGE_IN_FAILED
from .outputs import upload_outputs
from .sandbox import application_status, inside, output_tail, plain_name
from .transport import Client
from .usage import TreeUsage, kilobytes

DEFAULT_STDOUT = "std.out"
DEFAULT_STDERR = "std.err"
FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"
POLL = 0.05  # seconds between looks at the running payload
# The reason of a job stopped because the pilot's own lifetime ended (a pilot failure).
LIFETIME_ENDED = "pilot failure: the pilot's lifetime ended"


def log_to_stderr(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} pilot: {message}", file=sys.stderr, flush=True)


@dataclass
class Options:
    """How the pilot runs payloads. `deadline` is `time.monotonic()` when its time is up."""

    workdir_root: str | None = None
    heartbeat: float = 10.0
    deadline: float = math.inf
    kill_grace: float = 3.0
    keep_workdir: bool = False
    log: Callable[[str], None] = log_to_stderr


@dataclass
class Payload:
    """What a job runs, as the match answer describes it."""

    executable: str
    arguments: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    output_sandbox: list[str] = field(default_factory=list)
    input_sandbox: list[dict] = field(default_factory=list)
    stdout_name: str = DEFAULT_STDOUT
    stderr_name: str = DEFAULT_STDERR
    wall_limit_seconds: float | None = None
    max_output_bytes: int | None = None  # the server's MaxOutputSandboxBytes

    @classmethod
    def from_answer(cls, raw: dict) -> Payload:
        limit = raw.get("wall_limit_seconds")
        stdout_name = raw.get("stdout_name")
        stderr_name = raw.get("stderr_name")
        return cls(
            executable=str(raw.get("executable") or ""),
            arguments=[str(a) for a in raw.get("arguments") or []],
            environment={str(k): str(v) for k, v in (raw.get("environment") or {}).items()},
            output_sandbox=[str(p) for p in raw.get("output_sandbox") or []],
            input_sandbox=[i for i in raw.get("input_sandbox") or [] if isinstance(i, dict)],
            stdout_name=stdout_name if plain_name(stdout_name) else DEFAULT_STDOUT,
            stderr_name=stderr_name if plain_name(stderr_name) else DEFAULT_STDERR,
            wall_limit_seconds=float(limit) if limit is not None else None,
            max_output_bytes=_count(raw.get("max_output_bytes")),
        )


@dataclass
class Outcome:
    """How a payload ended: the final status report, and what was uploaded."""

    status: str  # finished | failed | cancelled
    reason: str
    exit_code: int | None = None
    application_status: str | None = None
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    peak_memory_kb: int = 0
    hostname: str = field(default_factory=socket.gethostname)
    uploaded: list[str] = field(default_factory=list)
    output_truncated: str = ""  # what of the outputs was cut or left out, or why none went up
    reported: bool = False
    pilot_failure: bool = False  # stopped because the pilot's lifetime ended, not the job's
    error_code: int | None = None  # the pilot's own error code (logbook's), when it knows one

    @property
    def ok(self) -> bool:
        return self.status == "finished" and self.exit_code == 0

    def report(self, reference: str) -> dict:
        body = {
            "pilot_reference": reference,
            "status": self.status,
            "reason": self.reason,
            "cpu_seconds": round(self.cpu_seconds, 3),
            "wall_seconds": round(self.wall_seconds, 3),
            "peak_memory_kb": self.peak_memory_kb,
            "hostname": self.hostname[:255],
        }
        if self.exit_code is not None:
            body["exit_code"] = self.exit_code
        if self.application_status is not None:
            body["application_status"] = self.application_status
        if self.pilot_failure:
            body["pilot_failure"] = True
        elif self.error_code is not None and self.status == "failed":
            body["error_code"] = self.error_code
        if self.output_truncated:
            body["output_truncated"] = self.output_truncated
        return body


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class InputError(Exception):
    """An input sandbox file could not be had as the match answer describes it."""


class LaunchError(Exception):
    """The executable could not be started: `code` is the shell's (127 not found, 126 not
    runnable)."""

    def __init__(self, code: int, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason


def run_job(client: Client, job: dict, reference: str, options: Options | None = None) -> Outcome:
    """Run the job's payload from start to final report (see the module's docstring)."""
    options = options or Options()
    payload = Payload.from_answer(job["payload"])
    path = f"/api/v1/jobs/{job['id']}"
    refused = _step(client, path, reference, "starting", options.log)
    if refused:
        return Outcome("failed", refused)
    workdir = tempfile.mkdtemp(prefix=f"gridwms-job{job['id']}-", dir=options.workdir_root)
    options.log(f"job {job['id']}: working directory {workdir}")
    try:
        outcome, ours = _run_in(client, path, reference, payload, workdir, options)
        if ours:
            outcome.reported = _report(client, path, reference, outcome, options.log)
    finally:
        if not options.keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    options.log(f"job {job['id']}: {outcome.status} ({outcome.reason})")
    return outcome


def _run_in(
    client: Client, path: str, reference: str, payload: Payload, workdir: str, options: Options
) -> tuple[Outcome, bool]:
    """The payload's outcome, and whether the job is still this pilot's to report on."""
    try:
        fetch_inputs(client, path, reference, payload, workdir)
    except InputError as exc:
        return Outcome("failed", f"input sandbox: {exc}", error_code=STAGE_IN_FAILED), True
    refused = _step(client, path, reference, "running", options.log)
    if refused:
        return Outcome("failed", refused), False
    outcome = execute(client, path, reference, payload, workdir, options)
    if outcome.pilot_failure:  # the job runs again elsewhere: nothing of this attempt is kept
        return outcome, True
    upload = upload_outputs(client, path, reference, payload, workdir, options)
    outcome.uploaded, outcome.output_truncated = upload.names, upload.truncated
    if upload.problem:
        outcome.reason = f"{outcome.reason}; {upload.problem}"
    elif upload.truncated:
        outcome.reason = f"{outcome.reason}; output truncated"
    return outcome, True


def _step(client: Client, path: str, reference: str, status: str, log) -> str | None:
    """Report the job `starting` or `running`; the reason when the server refuses it."""
    code, answer = client.post(f"{path}/status/", {"pilot_reference": reference, "status": status})
    if code >= 400:
        log(f"{path}: the {status} report was answered {code} {answer}; the payload is not run")
        return f"the {status} report was refused ({code})"
    return None


def _report(client: Client, path: str, reference: str, outcome: Outcome, log) -> bool:
    try:
        code, answer = client.post(f"{path}/status/", outcome.report(reference))
    except OSError as exc:
        log(f"{path}: the final report was lost: {exc}")
        return False
    if code >= 400:
        log(f"{path}: the final report was answered {code} {answer}")
        return False
    return True


def fetch_inputs(client: Client, path: str, reference: str, payload: Payload, workdir: str) -> None:
    """Download each input sandbox file into the working directory and check it."""
    query = urllib.parse.urlencode({"pilot_reference": reference})
    for item in payload.input_sandbox:
        name = item.get("name")
        if not plain_name(name):
            raise InputError(f"{name!r} is not a plain file name")
        dest = os.path.join(workdir, name)
        url = f"{path}/input/{urllib.parse.quote(name, safe='')}?{query}"
        try:
            code, answer = client.download(url, dest)
        except OSError as exc:
            raise InputError(f"{name}: {exc}") from exc
        if code != 200:
            raise InputError(f"{name}: the server answered {code} {answer.get('detail', answer)}")
        size, digest = _size_and_sha256(dest)
        if item.get("size") is not None and size != item["size"]:
            raise InputError(f"{name}: {size} bytes received, {item['size']} expected")
        if item.get("sha256") and digest != str(item["sha256"]).lower():
            raise InputError(f"{name}: its sha256 is not the one expected")


def _size_and_sha256(path: str) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(64 * 1024), b""):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def payload_environment(payload: Payload, workdir: str) -> dict[str, str]:
    """The pilot's minimal environment with the job's over it."""
    env = {
        "PATH": os.environ.get("PATH") or FALLBACK_PATH,
        "HOME": workdir,
        "LANG": os.environ.get("LANG") or "C.UTF-8",
    }
    env.update(payload.environment)
    return env


def resolve_executable(executable: str, workdir: str, search_path: str) -> str:
    """The file to execute (see the module's docstring), or LaunchError."""
    if not executable or "\0" in executable:
        raise LaunchError(127, f"executable not found: {executable!r}")
    if os.path.isabs(executable):
        candidate = executable
    elif "/" in executable:
        if ".." in executable.split("/"):
            raise LaunchError(127, f"executable not found: {executable} leaves the directory")
        candidate = os.path.join(workdir, executable)
    elif os.path.isfile(os.path.join(workdir, executable)):
        candidate = os.path.join(workdir, executable)
    else:
        found = shutil.which(executable, path=search_path)
        if found is None:
            raise LaunchError(127, f"executable not found: {executable}")
        return found
    if not os.path.isfile(candidate):
        raise LaunchError(127, f"executable not found: {executable}")
    if inside(workdir, candidate) and not os.access(candidate, os.X_OK):
        mode = os.stat(candidate).st_mode
        os.chmod(candidate, mode | stat.S_IXUSR)
    if not os.access(candidate, os.X_OK):
        raise LaunchError(126, f"executable not runnable: {executable} (permission denied)")
    return candidate


class Running:
    """A started payload: its launcher (`launcher`), the leader of their own process group
    (pgid = its pid), ends as the payload does and says what the payload used."""

    def __init__(self, proc: subprocess.Popen, launched: Launched | None = None):
        self.proc = proc
        self.pid = proc.pid
        self.launched = launched
        self.started = time.monotonic()
        self.ended: float | None = None
        self.usage = None
        self.tree = TreeUsage(proc.pid, skip=proc.pid if launched else None)

    @classmethod
    def start(
        cls, argv: list[str], executable: str, workdir: str, env: dict, out: str, err: str
    ) -> Running:
        with open(out, "wb") as stdout, nullcontext() if err == out else open(err, "wb") as e:
            try:
                launched = Launched.start(
                    executable,
                    argv,
                    cwd=workdir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=stdout,
                    stderr=subprocess.STDOUT if e is None else e,
                    start_new_session=True,
                    close_fds=True,
                )
            except (OSError, ValueError) as exc:
                raise LaunchError(126, f"executable not runnable: {argv[0]} ({exc})") from exc
        if launched.payload_pid is None:  # its exec failed: nothing ran
            launched.proc.wait()
            launched.finish()
            code, text = launched.failure or (0, "the launcher ended")
            if code == errno.ENOENT:
                raise LaunchError(127, f"executable not found: {argv[0]} ({text})")
            raise LaunchError(126, f"executable not runnable: {argv[0]} ({text})")
        return cls(launched.proc, launched)

    def watch(self, limit: float, kill_requested: threading.Event, grace: float) -> str | None:
        """Wait until the payload ends (None), passes its limit ("wall") or a kill is requested
        ("kill"), stopping it in those two cases. In every case, what is left of its process
        group is killed and the payload reaped (its exit status and resource use kept)."""
        end = self.started + limit
        cause = None
        try:
            while not self._ended():
                self.tree.sample()
                if kill_requested.is_set():
                    cause = "kill"
                    break
                if time.monotonic() >= end:
                    cause = "wall"
                    break
                kill_requested.wait(min(POLL, max(0.0, end - time.monotonic())))
            if cause:
                self._stop(grace)
        finally:
            self._signal_group(signal.SIGKILL)
            self._reap()
        return cause

    def _ended(self) -> bool:
        """Whether the main process has ended, without reaping it: while it is a zombie its
        pid, hence its process group's id, cannot be taken by another process."""
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = True
        if info is not None and self.ended is None:
            self.ended = time.monotonic()
        return info is not None

    def _stop(self, grace: float) -> None:
        self._signal_group(signal.SIGTERM)
        until = time.monotonic() + grace
        while not self._ended() and time.monotonic() < until:
            time.sleep(POLL)
        payload = self.launched.payload_pid if self.launched else None
        if payload and not self._ended():  # the payload alone, so its launcher can say its use
            try:
                os.kill(payload, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            until = time.monotonic() + 1.0
            while not self._ended() and time.monotonic() < until:
                time.sleep(POLL)

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _reap(self) -> None:
        try:
            _, status, self.usage = os.wait4(self.pid, 0)
            self.proc.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            self.proc.returncode = self.proc.returncode if self.proc.returncode is not None else -9
        if self.launched:
            self.launched.finish()
        if self.ended is None:
            self.ended = time.monotonic()

    @property
    def exit_code(self) -> int:
        code = self.proc.returncode or 0
        return 128 - code if code < 0 else code

    @property
    def signal_name(self) -> str | None:
        code = self.proc.returncode or 0
        if code >= 0:
            return None
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"

    def measured(self) -> dict:
        usage, told = self.usage, self.launched
        if told and told.maxrss is not None:  # the payload's own, from its launcher
            cpu, peak = told.cpu or 0.0, max(self.tree.sampled_kb, kilobytes(told.maxrss))
        else:  # its launcher was killed: the group as sampled
            cpu = usage.ru_utime + usage.ru_stime if usage else 0.0
            peak = self.tree.peak_kb(usage.ru_maxrss if usage else 0)
        return {
            "exit_code": self.exit_code,
            "cpu_seconds": cpu,
            "wall_seconds": (self.ended or time.monotonic()) - self.started,
            "peak_memory_kb": peak,
        }


class Heartbeats(threading.Thread):
    """Heartbeats with the output tail every `interval` seconds, until stopped or a kill is
    requested (then `kill_requested` is set and no more heartbeats are sent)."""

    def __init__(self, client: Client, path: str, reference: str, interval: float, tail: str, log):
        super().__init__(name="gridwms-heartbeats", daemon=True)
        self.client = client
        self.path = path
        self.reference = reference
        self.tail = tail
        self.log = log
        self.interval = max(0.1, interval)
        self.kill_requested = threading.Event()
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(self.interval):
            body = {"pilot_reference": self.reference, "output_tail": output_tail(self.tail)}
            try:
                code, answer = self.client.post(self.path, body)
            except OSError as exc:
                self.log(f"{self.path}: heartbeat lost: {exc}")
                continue
            commands = answer.get("commands")
            if code == 200 and isinstance(commands, list) and "kill" in commands:
                self.log(f"{self.path}: kill requested")
                self.kill_requested.set()
                return
            if code >= 400:
                self.log(f"{self.path}: heartbeat answered {code} {answer}")

    def stop(self, wait: float) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(wait)


def execute(
    client: Client, path: str, reference: str, payload: Payload, workdir: str, options: Options
) -> Outcome:
    """Run the payload to its end under its limits, with heartbeats: its outcome, measured."""
    env = payload_environment(payload, workdir)
    out = os.path.join(workdir, payload.stdout_name)
    err = os.path.join(workdir, payload.stderr_name)
    argv = [payload.executable, *payload.arguments]
    try:
        executable = resolve_executable(payload.executable, workdir, env.get("PATH", ""))
        running = Running.start(argv, executable, workdir, env, out, err)
    except LaunchError as exc:
        open(out, "ab").close()
        with open(err, "ab") as f:  # the user reads why with the job's stderr
            f.write(f"gridwms pilot: {exc.reason}\n".encode())
        return Outcome("failed", exc.reason, exit_code=exc.code)
    wall_limit = payload.wall_limit_seconds
    own = math.inf if wall_limit is None else wall_limit
    pilot_ends = options.deadline - running.started < own  # the pilot's time is the limit
    limit = max(0.0, min(own, options.deadline - running.started))
    options.log(f"{path}: started {argv[0]!r} as pid {running.pid}, limit {_seconds(limit)} s")
    beats = Heartbeats(client, f"{path}/heartbeat/", reference, options.heartbeat, out, options.log)
    beats.start()
    try:
        cause = running.watch(limit, beats.kill_requested, options.kill_grace)
    finally:
        beats.stop(wait=max(5.0, options.heartbeat))
    if beats.kill_requested.is_set():  # the job is cancelled, even if it ended meanwhile
        cause = "kill"
    measured = running.measured()
    if cause == "kill":
        status, reason = "cancelled", "killed on request"
    elif cause == "wall" and pilot_ends:
        reason = f"{LIFETIME_ENDED} {_seconds(limit)} s into the payload (its own limit: "
        reason += f"{_seconds(own)} s)"
        return Outcome("failed", reason, pilot_failure=True, **measured)
    elif cause == "wall":
        reason = f"killed: over its wall-clock limit of {_seconds(limit)} s"
        app = application_status(out)
        return Outcome(
            "failed", reason, application_status=app, error_code=REACHED_MAX_TIME, **measured
        )
    elif running.signal_name:
        status, reason = "finished", f"exit code {running.exit_code} ({running.signal_name})"
    else:
        status, reason = "finished", f"exit code {running.exit_code}"
    return Outcome(status, reason, application_status=application_status(out), **measured)


def _seconds(value: float) -> str:
    if math.isinf(value):
        return "no"
    rounded = round(value, 1)
    return str(int(rounded)) if rounded.is_integer() else str(rounded)
