"""An input sandbox over the limit answers 413 naming MaxInputSandboxBytes on every server a
host may run: the development server (`make run`'s runserver, which turned a hop-by-hop
`Connection` header into a 500) and the production ones (granian, gunicorn). The client sends
its whole 100 MiB body and reads the answer, as curl and the pilots do."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests._databases import scratch_database

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
pytestmark = pytest.mark.timeout(600)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    with scratch_database("upload_limits") as url:
        env = server_env(url, tmp_path_factory.mktemp("static"))
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True
        )
        yield env


def server_env(url: str, static: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRIDWMS_", "PYTEST_"))}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.update(
        DATABASE_URL=url,
        SECRET_KEY="upload-limits-" + "s3cr3t" * 10,
        STATIC_ROOT=str(static),
        STATIC_MANIFEST="0",
        WEB_WORKERS="1",
        WEB_THREADS="2",
        WEB_ACCESS_LOG="",
    )
    return env


@pytest.fixture(params=["runserver", "granian", "gunicorn"])
def server(request, database, tmp_path):
    port = free_port()
    env = dict(database)
    if request.param == "runserver":
        env["DEBUG"] = "1"
        argv = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    else:
        env.update(WEB_SERVER=request.param, HOST="127.0.0.1", PORT=str(port))
        argv = [sys.executable, "-m", "gridwms.webserver"]
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            try:
                if request_once(port, "GET", "/login/")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
        yield port, log
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def request_once(port: int, method: str, path: str, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def multipart(size: int):
    """A submission of one job with one input file of `size` bytes: (headers, body chunks)."""
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="job"\r\n\r\n'
        '{"executable": "/bin/cat", "arguments": ["data.bin"], "cpu_time": 60}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="input_sandbox"; '
        'filename="data.bin"\r\nContent-Type: application/octet-stream\r\n\r\n'
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def chunks():
        yield head
        block = b"x" * MIB
        for _ in range(size // MIB):
            yield block
        yield tail

    headers = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Content-Length": str(len(head) + size + len(tail)),
        "Authorization": "Token not-needed-the-size-is-judged-first",
    }
    return headers, chunks()


def test_a_100_mib_input_sandbox_answers_413_naming_max_input_sandbox_bytes(server):
    port, log = server
    headers, body = multipart(100 * MIB)
    status, raw = request_once(port, "POST", "/api/v1/jobs/", body, headers)

    assert status == 413, (raw[:500], log.read_text()[-3000:])
    answer = json.loads(raw)
    [message] = answer["input_sandbox"]
    assert "at most 10485760 (the MaxInputSandboxBytes parameter)" in message
    assert "UPLOAD_MAX_BYTES" in answer["detail"]
    # The server is still there for the next request.
    assert request_once(port, "GET", "/login/")[0] == 200
