"""Starting PanDA's own pilot (panda-pilot, its sdist under .clients/panda-pilot/) on this
machine against a gridwms server, as a site's launcher would (docs/operator-guide.md, PanDA's
pilot). Standard library only: what the pilot needs before it starts, and the process.

- Its directory: the pilot runs in it (it is the pilot's PILOT_HOME), owned by the pilot's own
  unix user. In it: the token file (PANDA_AUTH_TOKEN, PANDA_AUTH_DIR), the queue description
  the server made (queuedata.json, cric_pandaqueues.json, cric_ddmendpoints.json: the pilot
  reads them from there, never from a URL of its own), the pilot configuration
  (HARVESTER_PILOT_CONFIG) and the payload runner, staged as the job's one input file under
  inputs/ where the pilot's `mv` copytool looks for it (a pilot downloads a transformation
  only from fixed hosts). The pilot moves the job's log tarball into out/.
- The process: `setsid`, as its own user, with PILOT_NOKILL=1: when it ends, PanDA's pilot
  kills every process of its user whose parent is pid 1, which would be the launcher's
  neighbours otherwise.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PILOT_DIR = ROOT / ".clients" / "panda-pilot"
PILOT_USER = "gridpilot"  # the unix user the pilot runs as when the launcher is root
TOKEN_FILE = "gridwms.token"
ORIGIN = "gridwms"

# The job's one input file: PanDA's generic pilot runs `./<transformation> <jobPars>` from the
# job's directory, the transformation staged there as an input file. It runs the job's command,
# given in jobPars, as it is.
RUNNER_NAME = "gridwms-run"
RUNNER = b'#!/bin/sh\n# gridwms: the job\'s command is in the arguments.\nexec "$@"\n'
SCOPE = "gridwms"
# The queue's catchall: the mv copytool takes inputs from, and moves outputs to, Rucio-style
# paths (SCOPE/xx/yy/name) under the pilot's --input-destination-dir and --output-dir.
CATCHALL = "mv_final_destination"


def adler32_of_bytes(data: bytes) -> str:
    return f"{zlib.adler32(data) & 0xFFFFFFFF:08x}"


def adler32_of_file(path: Path) -> str:
    value = 1
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            value = zlib.adler32(chunk, value)
    return f"{value & 0xFFFFFFFF:08x}"


RUNNER_ADLER32 = adler32_of_bytes(RUNNER)


def rucio_path(scope: str, name: str) -> str:
    """Where the pilot's mv copytool looks for an input (and puts an output) under its
    directories: <scope>/md5(scope:name)[0:2]/md5(...)[2:4]/<name>."""
    digest = hashlib.md5(f"{scope}:{name}".encode()).hexdigest()  # a path, not a secret
    return "/".join([*scope.split("."), digest[0:2], digest[2:4], name])


class LaunchError(Exception):
    """The pilot could not be started (its queue description, its user, its files)."""


@dataclass(frozen=True)
class Server:
    """Where the pilot reaches gridwms: a base URL (scheme://host:port) and a token."""

    url: str
    token: str

    def get_json(self, path: str) -> object:
        """GET a file of the server's PanDA cache with the pilot's credential."""
        request = urllib.request.Request(
            self.url.rstrip("/") + path,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Origin": ORIGIN,
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return json.loads(answer.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise LaunchError(f"GET {path}: {exc}") from exc


def pilot_account() -> tuple[int, int] | None:
    """(uid, gid) the pilot runs as: PILOT_USER when the launcher is root (created if
    missing), else None (the launcher's own user)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(PILOT_USER)
    except KeyError:
        entry = None
    if entry is None:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        done = subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PILOT_USER],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode not in (0, 9):  # 9: it was created meanwhile
            raise LaunchError(f"cannot create the user {PILOT_USER}: {done.stderr.strip()}")
        entry = pwd.getpwnam(PILOT_USER)
    return entry.pw_uid, entry.pw_gid


def interpreter() -> str:
    """A Python the pilot's user can run: the system's (the launcher's may sit in a home
    directory that user cannot enter)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def pilot_config(workdir: Path, heartbeat: int) -> configparser.ConfigParser:
    """The pilot's configuration: its own defaults (it reads only the one file it is given),
    with the queue description read from the files in its directory (no URL of CERN's), short
    heartbeats (they carry a kill to it) and short waits between failed server updates."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(PILOT_DIR / "pilot" / "util" / "default.cfg")
    config["Pilot"].update(
        {"heartbeat": str(heartbeat), "debug_heartbeat": str(heartbeat), "update_sleep": "10"}
    )
    information = config["Information"]
    information["cache_dir"] = str(workdir)
    for key, name in (
        ("queuedata_url", "queuedata.json"),
        ("queues_url", "cric_pandaqueues.json"),
        ("storages_url", "cric_ddmendpoints.json"),
    ):
        information[key] = str(workdir / name)
    for key in ("queuedata_cvmfs", "queues_cvmfs", "storages_cvmfs"):
        information[key] = str(workdir / "no-cvmfs.json")
    return config


def prepare(workdir: Path, server: Server, queue: str, heartbeat: int, owner) -> None:
    """Fill the pilot's directory (see the module's docstring); `owner` (uid, gid) or None."""
    quoted = urllib.parse.quote(queue, safe="")
    queuedata = server.get_json(f"/cache/schedconfig/{quoted}.all.json")
    queues = server.get_json(f"/cache/schedconfig/{quoted}.json")
    storages = server.get_json("/cache/ddmendpoints.json")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "out").mkdir(exist_ok=True)
    (workdir / "queuedata.json").write_text(json.dumps(queuedata))
    (workdir / "cric_pandaqueues.json").write_text(json.dumps(queues))
    (workdir / "cric_ddmendpoints.json").write_text(json.dumps(storages))
    token = workdir / TOKEN_FILE
    token.write_text(server.token)
    token.chmod(0o600)
    runner = workdir / "inputs" / rucio_path(SCOPE, RUNNER_NAME)
    runner.parent.mkdir(parents=True, exist_ok=True)
    runner.write_bytes(RUNNER)
    runner.chmod(0o755)
    with (workdir / "pilot.cfg").open("w") as f:
        pilot_config(workdir, heartbeat).write(f)
    if owner is not None:
        for path in [workdir, *workdir.rglob("*")]:
            os.chown(path, *owner, follow_symlinks=False)


def command(server: Server, queue: str, workdir: Path, lifetime: int, label: str) -> list[str]:
    """The pilot's command line: one job (--getjobfailures 1: no job, it ends), the generic
    workflow and user, no proxy (it authenticates with the token), the log tarball moved into
    out/, the inputs taken from inputs/."""
    parsed = urllib.parse.urlsplit(server.url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return [
        interpreter(),
        str(PILOT_DIR / "pilot.py"),
        "--queue",
        queue,
        "--url",
        f"{parsed.scheme}://{parsed.hostname}",
        "--port",
        str(port),
        "--workflow",
        "generic",
        "--pilot-user",
        "generic",
        "--joblabel",
        label,
        "--noproxyverification",
        "--getjobfailures",
        "1",
        "--lifetime",
        str(lifetime),
        "--output-dir",
        str(workdir / "out"),
        "--input-destination-dir",
        str(workdir / "inputs"),
    ]


def environment(workdir: Path, reference: str) -> dict[str, str]:
    """The pilot's environment: nothing of the launcher's but a PATH. HARVESTER_WORKER_ID is
    sent with its getJob (PanDA's worker id): the pilot record it claims for."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workdir),
        "LANG": "C.UTF-8",
        "PILOT_NOKILL": "1",
        "HARVESTER_PILOT_CONFIG": str(workdir / "pilot.cfg"),
        "HARVESTER_WORKER_ID": reference,
        "PANDA_AUTH_TOKEN": TOKEN_FILE,
        "PANDA_AUTH_ORIGIN": ORIGIN,
        "PANDA_AUTH_DIR": f"{workdir}/",  # the pilot takes its dirname: the slash matters
    }


def start(
    args: list[str], env: dict[str, str], workdir: Path, log_path: Path, owner
) -> subprocess.Popen:
    """The pilot in a session of its own (setsid), as `owner`, its output in log_path. The
    session's leader is a shell around the pilot, not the pilot: PanDA's pilot makes itself a
    process group leader (setpgrp), which a session leader may not."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    ids = {} if owner is None else {"user": owner[0], "group": owner[1], "extra_groups": []}
    with log_path.open("ab") as out:
        return subprocess.Popen(
            ["/bin/sh", "-c", '"$@"; exit $?', "panda-pilot", *args],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **ids,
        )


def descendants(pid: int) -> list[int]:
    """The process and every process below it (the pilot starts its payload in sessions of
    its own: a session or a process group would not hold them all)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, ()))
    return out


def end_tree(pid: int, grace: float = 10.0) -> None:
    """SIGTERM the pilot and every process below it, then SIGKILL what is left of them after
    `grace` seconds. The processes are remembered as they were first seen: the shell around
    the pilot dies first, and the pilot, reparented, is no longer below it."""
    seen = descendants(pid)
    _signal(seen, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p) for p in seen):
        time.sleep(0.2)
    for member in list(seen):  # and what they started meanwhile
        seen += [p for p in descendants(member) if p not in seen]
    _signal([p for p in seen if _alive(p)], signal.SIGKILL)


def _signal(pids: list[int], sig: int) -> None:
    for member in pids:
        try:
            os.kill(member, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def leftovers(reference: str, workdir: Path) -> list[int]:
    """Processes the pilot left behind once it has ended (PILOT_NOKILL=1 keeps it from killing
    every orphan of its user): those with its worker id in their environment or working in its
    directory. A payload whose pilot stopped it can leave a child reparented to pid 1."""
    marker = f"HARVESTER_WORKER_ID={reference}".encode()
    inside = (str(workdir), f"{workdir}/")
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                out.append(int(entry.name))
                continue
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == inside[0] or cwd.startswith(inside[1]):
            out.append(int(entry.name))
    return out


def end_leftovers(reference: str, workdir: Path) -> int:
    """SIGKILL what the ended pilot left behind (leftovers); how many there were."""
    found = [pid for pid in leftovers(reference, workdir) if _alive(pid)]
    _signal(found, signal.SIGKILL)
    return len(found)


def wait(process: subprocess.Popen, timeout: float | None) -> int:
    """The pilot's exit code; past `timeout` seconds it and its payload are ended first."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        end_tree(process.pid)
        return process.wait()
