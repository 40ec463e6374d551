"""gunicorn's configuration for gridwms in production (`make serve`, scripts/serve.sh).

    gunicorn -c gridwms/gunicorn.conf.py gridwms.wsgi

Everything an operator tunes comes from the environment (docs/operator-guide.md, Parameters):
  WEB_BIND          address:port to listen on (default HOST:PORT, 127.0.0.1:8000)
  WEB_WORKERS       worker processes (default: one per core)
  WEB_THREADS       threads per worker (gthread: each keeps its pilots' connections alive)
  WEB_TIMEOUT       seconds a request may take before its worker is restarted (default 60)
  WEB_KEEPALIVE     seconds an idle keep-alive connection is kept open (default 75)
  WEB_ACCESS_LOG    where access lines go: "-" stderr (default), a file, or "" for none
  LOG_FORMAT=json   JSON lines for the error and the access log (core/logs.py)
The server is always the production one: DEBUG is forced off here.
"""

import logging
import os
import shutil
import tempfile

from gunicorn.glogging import Logger

os.environ["DEBUG"] = "0"
# Metrics of every worker, summed by /metrics (prometheus_client's multiprocess mode): the
# directory must be set before prometheus_client is imported, and start empty.
_metrics_dir = None
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    _metrics_dir = tempfile.mkdtemp(prefix="gridwms-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _metrics_dir
else:
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)
    for _name in os.listdir(os.environ["PROMETHEUS_MULTIPROC_DIR"]):
        if _name.endswith(".db"):
            os.unlink(os.path.join(os.environ["PROMETHEUS_MULTIPROC_DIR"], _name))

_cores = os.cpu_count() or 1
bind = os.environ.get("WEB_BIND") or (
    f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
)
workers = int(os.environ.get("WEB_WORKERS", _cores))
threads = int(os.environ.get("WEB_THREADS", 4))
worker_class = os.environ.get("WEB_WORKER_CLASS", "gthread")
timeout = int(os.environ.get("WEB_TIMEOUT", 60))
graceful_timeout = 30
keepalive = int(os.environ.get("WEB_KEEPALIVE", 75))
# Django is imported once, before the workers fork (faster start, shared memory); it opens no
# database connection at import, so each worker gets its own.
preload_app = True
wsgi_app = "gridwms.wsgi:application"
accesslog = os.environ.get("WEB_ACCESS_LOG", "-") or None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
proc_name = "gridwms-web"
# gunicorn >= 25's control socket is one path per user: several hosts on a machine would clash.
control_socket_disable = True
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")


def on_exit(server):
    """The master stops: a directory made here goes with it (workers never run this)."""
    if _metrics_dir:
        shutil.rmtree(_metrics_dir, ignore_errors=True)


def child_exit(server, worker):
    """A worker that died leaves its live gauges behind: drop them (prometheus_client)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


class GunicornLogger(Logger):
    """gunicorn's logger with the project's format: with LOG_FORMAT=json its error log is JSON
    and each access is one JSON event built from a few fields (not gunicorn's every header and
    environ atom: a pilot's match takes milliseconds, its log line must stay cheap)."""

    def setup(self, cfg):
        super().setup(cfg)
        from core.logs import JsonFormatter, json_logs

        self._json = json_logs()
        if self._json:
            for log in (self.error_log, self.access_log):
                for handler in log.handlers:
                    handler.setFormatter(JsonFormatter())

    def access(self, resp, req, environ, request_time):
        if not self.access_log_enabled:
            return
        if not self._json:
            super().access(resp, req, environ, request_time)
            return
        status = str(resp.status).split(None, 1)[0]
        self.access_log.log(
            logging.INFO,
            "%s %s %s",
            environ.get("REQUEST_METHOD"),
            environ.get("RAW_URI"),
            status,
            extra={
                "remote": environ.get("REMOTE_ADDR", "-"),
                "method": environ.get("REQUEST_METHOD"),
                "path": environ.get("PATH_INFO"),
                "status": int(status),
                "bytes": getattr(resp, "sent", None),
                "ms": round(request_time.total_seconds() * 1000, 3),
                "user_agent": environ.get("HTTP_USER_AGENT", "-"),
            },
        )


logger_class = GunicornLogger
