"""The production web server of a host, configured from the environment (`make serve`).

    python -m gridwms.webserver

WEB_SERVER chooses it:
  granian   (default) Granian, a Rust HTTP/1.1 server, serving gridwms.wsgi: on the pilots'
            workload it spends less CPU per request than gunicorn (0.55 against 0.76 ms per
            match; bench/http_match.py measures both side by side)
  gunicorn  gunicorn with gridwms/gunicorn.conf.py (gthread workers)
Common settings (docs/operator-guide.md, The web server and Parameters):
  WEB_BIND or HOST/PORT   where to listen (default 127.0.0.1:8000)
  WEB_WORKERS             processes (default: one per core)
  WEB_THREADS             threads per process (default 4): requests waiting on the database
                          overlap with those using the CPU
  WEB_TIMEOUT             seconds: a request's headers must arrive within it (granian), a worker
                          silent that long is restarted (gunicorn); default 60
  WEB_GRACEFUL_TIMEOUT    seconds a stopping server gives requests under way (default 30)
  WEB_ACCESS_LOG          "-" stderr (default), a file, or "" for none
  LOG_FORMAT=json         JSON lines for the server's own and access logs (core/logs.py)
DEBUG is always off here: this is the production server.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bind() -> tuple[str, int]:
    spec = os.environ.get("WEB_BIND") or (
        f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
    )
    host, _, port = spec.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def metrics_dir() -> str | None:
    """Every worker writes its request metrics here (prometheus_client's multiprocess mode);
    /metrics sums them. Must be set before prometheus_client is imported, and start empty.
    Returns the directory when it was made here (to remove on exit)."""
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if given:
        os.makedirs(given, exist_ok=True)
        for name in os.listdir(given):
            if name.endswith(".db"):
                os.unlink(os.path.join(given, name))
        return None
    made = tempfile.mkdtemp(prefix="gridwms-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = made
    return made


def log_config(access_log: str) -> dict:
    from core.logs import JsonFormatter, json_logs

    text = {"()": "logging.Formatter", "fmt": "[%(asctime)s] [%(levelname)s] %(message)s"}
    json_formatter = {"()": JsonFormatter}
    access_handler: dict = {"class": "logging.StreamHandler", "stream": "ext://sys.stderr"}
    if access_log not in ("", "-"):
        access_handler = {"class": "logging.FileHandler", "filename": access_log}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "generic": json_formatter if json_logs() else text,
            "access": json_formatter if json_logs() else {"()": "logging.Formatter"},
        },
        "handlers": {
            "console": {
                "formatter": "generic",
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
            },
            "access": {**access_handler, "formatter": "access"},
        },
        "loggers": {
            "_granian": {"handlers": ["console"], "level": "INFO", "propagate": False},
            "granian.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        },
    }


def serve_granian() -> None:
    from granian.constants import Interfaces
    from granian.http import HTTP1Settings
    from granian.server import Server

    address, port = bind()
    access_log = os.environ.get("WEB_ACCESS_LOG", "-")
    timeout = int(os.environ.get("WEB_TIMEOUT", 60))
    Server(
        "gridwms.wsgi:application",
        address=address,
        port=port,
        interface=Interfaces.WSGI,
        workers=int(os.environ.get("WEB_WORKERS", os.cpu_count() or 1)),
        blocking_threads=int(os.environ.get("WEB_THREADS", 4)),
        http1_settings=HTTP1Settings(header_read_timeout=timeout * 1000, keep_alive=True),
        log_dictconfig=log_config(access_log),
        log_access=access_log != "",
        log_access_format="%(addr)s %(method)s %(path)s %(status)d %(dt_ms).3fms"
        if access_log
        else None,
        respawn_failed_workers=True,
        workers_kill_timeout=int(os.environ.get("WEB_GRACEFUL_TIMEOUT", 30)),
        working_dir=ROOT,
        websockets=False,
    ).serve()


def main() -> None:
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gridwms.settings")
    server = os.environ.get("WEB_SERVER", "granian")
    if server == "gunicorn":
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        os.chdir(ROOT)
        os.execv(gunicorn, [gunicorn, "-c", "gridwms/gunicorn.conf.py"])
    if server != "granian":
        raise SystemExit(f"gridwms: WEB_SERVER={server} is neither granian nor gunicorn")
    made = metrics_dir()
    sys.path.insert(0, str(ROOT))
    try:
        serve_granian()
    finally:
        if made:
            shutil.rmtree(made, ignore_errors=True)


if __name__ == "__main__":
    main()
