"""Hosts for the multi-host test: each one a process group running `scripts/serve.sh` (the
production web server and the django-q2 worker cluster, as `make serve` starts them) on its own
port and, where the machine allows it (root with `ip netns`), in its own network namespace.

A namespace reaches the root namespace over a veth pair. PostgreSQL may listen on 127.0.0.1 only
(here it does), which no other namespace can reach: a small TCP forwarder in this process listens
on the root end of each pair and pipes to PostgreSQL, as a host's own connection would.
Without namespaces (not root, no iproute2, a container that forbids them, or
GRIDWMS_TEST_NETNS=0) the hosts are process groups on loopback, and `Network.reason` says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from conftest import SUITE_SETTINGS

ROOT = Path(__file__).resolve().parents[1]
# Ports tried for the web servers and forwarders (a machine shared by several test runs gives
# each its own range).
PORTS = os.environ.get("GRIDWMS_TEST_PORTS", "8450-8499")


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    low, high = (int(p) for p in PORTS.split("-"))
    found = []
    for port in range(low, high + 1):
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        found.append(port)
        if len(found) == n:
            return found
    raise RuntimeError(f"no {n} free ports in {PORTS} (GRIDWMS_TEST_PORTS)")


# --- a TCP forwarder to PostgreSQL ------------------------------------------------------------


class TcpForwarder:
    """Accepts on (host, port) and pipes each connection to `target`, both ways; a side that
    closes closes the other (a killed host's connections end at PostgreSQL too)."""

    def __init__(self, host: str, port: int, target: tuple[str, int]):
        self.address, self.target = (host, port), target
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.writers: set[asyncio.StreamWriter] = set()
        self.server = None

    def start(self) -> None:
        self.thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self.loop)
        self.server = future.result(10)

    async def _listen(self):
        return await asyncio.start_server(self._connection, *self.address)

    async def _connection(self, reader, writer):
        try:
            host, port = self.target
            if host.startswith("/"):  # a Unix socket's directory (the embedded server)
                path = f"{host}/.s.PGSQL.{port}"
                up_reader, up_writer = await asyncio.open_unix_connection(path)
            else:
                up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        self.writers |= {writer, up_writer}

        async def pipe(src, dst):
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()
                self.writers.discard(dst)

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def stop(self) -> None:
        async def close():
            self.server.close()
            for w in list(self.writers):
                w.close()

        if self.server is not None:
            asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


# --- where the hosts live ---------------------------------------------------------------------


@dataclass
class Place:
    netns: str | None
    address: str  # where the host's web server listens, and its clients connect
    port: int
    database: tuple[str, int]  # how the host reaches PostgreSQL


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


class Network:
    """Namespaces with veth pairs when possible, else loopback; cleaned up by teardown()."""

    def __init__(self, hosts: int, postgresql: tuple[str, int]):
        self.hosts, self.postgresql = hosts, postgresql
        self.namespaces: list[str] = []
        self.forwarders: list[TcpForwarder] = []
        self.reason = ""
        tag = os.getpid() % 100000
        self.subnet = f"10.213.{os.getpid() % 250}"
        self.names = [(f"gw{tag}n{i}", f"gw{tag}v{i}", f"gw{tag}p{i}") for i in range(hosts)]

    def setup(self) -> list[Place]:
        problem = self._why_not_namespaces()
        if problem is None:
            try:
                return self._namespaces()
            except (subprocess.SubprocessError, OSError) as exc:
                detail = getattr(exc, "stderr", b"") or b""
                problem = f"setting up network namespaces failed: {exc} {detail.decode()}"
                self.teardown()
        self.reason = f"hosts are process groups on loopback: {problem}"
        ports = free_ports(self.hosts)
        return [Place(None, "127.0.0.1", p, self.postgresql) for p in ports]

    @staticmethod
    def _why_not_namespaces() -> str | None:
        if os.environ.get("GRIDWMS_TEST_NETNS", "1") == "0":
            return "GRIDWMS_TEST_NETNS=0"
        if os.geteuid() != 0:
            return "network namespaces need root"
        if shutil.which("ip") is None:
            return "the ip command (iproute2) is missing"
        return None

    def _namespaces(self) -> list[Place]:
        places = []
        ports = free_ports(self.hosts)
        for i, (ns, veth, peer) in enumerate(self.names):
            outer, inner = f"{self.subnet}.{4 * i + 1}", f"{self.subnet}.{4 * i + 2}"
            _ip("netns", "add", ns)
            self.namespaces.append(ns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
            _ip("link", "set", peer, "netns", ns)
            _ip("addr", "add", f"{outer}/30", "dev", veth)
            _ip("link", "set", veth, "up")
            _ip("netns", "exec", ns, "ip", "addr", "add", f"{inner}/30", "dev", peer)
            _ip("netns", "exec", ns, "ip", "link", "set", peer, "up")
            _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
            [db_port] = free_ports(1, outer)
            forwarder = TcpForwarder(outer, db_port, self.postgresql)
            forwarder.start()
            self.forwarders.append(forwarder)
            places.append(Place(ns, inner, ports[i], (outer, db_port)))
        return places

    def teardown(self) -> None:
        for forwarder in self.forwarders:
            with contextlib.suppress(Exception):
                forwarder.stop()
        for ns, veth, _ in self.names:
            # Deleting the namespace takes its end of the pair; the other end goes with it.
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, timeout=10)
            subprocess.run(["ip", "link", "delete", veth], capture_output=True, timeout=10)
        self.namespaces, self.forwarders = [], []


# --- a host -----------------------------------------------------------------------------------


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group is still alive (zombies waiting to be reaped are not)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


class Host:
    """One host: `scripts/serve.sh all` in a process group of its own (pgid = its pid)."""

    def __init__(self, name: str, place: Place, database: str, workdir: Path):
        self.name, self.place = name, place
        self.workdir = workdir / name
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log = self.workdir / "host.log"
        db_host, db_port = place.database
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYTEST", "DJANGO_"))
            and k not in {"GRIDWMS_TESTING", *SUITE_SETTINGS}  # production's lifetimes
        }
        self.env.update(
            DEBUG="0",
            SECRET_KEY=f"multi-host-test-{os.getpid()}-secret-key-0123456789abcdef",
            DATABASE_URL=f"postgres://postgres@{quote(db_host, safe='')}:{db_port}/{database}",
            NODE_NAME=name,
            WEB_BIND=f"{place.address}:{place.port}",
            ALLOWED_HOSTS=place.address,
            WEB_WORKERS="2",
            WEB_THREADS="2",
            Q_WORKERS="2",
            WEB_ACCESS_LOG="",
            STATIC_ROOT=str(self.workdir / "static"),
            PROMETHEUS_MULTIPROC_DIR=str(self.workdir / "metrics"),
        )
        (self.workdir / "metrics").mkdir(exist_ok=True)
        self.proc: subprocess.Popen | None = None

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def start(self) -> None:
        command = ["bash", "scripts/serve.sh", "all"]
        if self.place.netns:
            command = ["ip", "netns", "exec", self.place.netns, *command]
        with open(self.log, "ab") as log:
            # A session of its own: the host is one process group, killed as one.
            self.proc = subprocess.Popen(
                command,
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def request(self, method: str, path: str, body=None, token: str = "", timeout=10.0):
        """(status, parsed JSON or None) over a fresh connection."""
        conn = http.client.HTTPConnection(self.place.address, self.place.port, timeout=timeout)
        try:
            headers = {"Content-Type": "application/json"}
            if token:
                headers["Authorization"] = f"Token {token}"
            conn.request(method, path, json.dumps(body) if body is not None else None, headers)
            response = conn.getresponse()
            data = response.read()
            return response.status, (json.loads(data) if data.strip() else None)
        finally:
            conn.close()

    def wait_serving(self, timeout: float) -> None:
        """Until /healthz answers at all (200 or 503: the web server is up)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited:\n{self.tail()}")
            with contextlib.suppress(OSError, http.client.HTTPException):
                status, _ = self.request("GET", "/healthz", timeout=5)
                if status in (200, 503):
                    return
            time.sleep(0.5)
        raise AssertionError(f"{self.name} did not serve within {timeout} s:\n{self.tail()}")

    def kill(self) -> None:
        """SIGKILL the whole process group: the host dies outright, mid-whatever."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        self.proc.wait(30)
        deadline = time.monotonic() + 30
        while _group_alive(self.pgid):
            if time.monotonic() > deadline:
                raise AssertionError(f"processes of {self.name} survived SIGKILL")
            time.sleep(0.1)

    def stop(self, grace: float = 10.0) -> None:
        if self.proc is None or (self.proc.poll() is not None and not _group_alive(self.pgid)):
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _group_alive(self.pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.kill()

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
