#!/usr/bin/env bash
# The production server of one host (`make serve`): DEBUG off, the web server (gridwms/webserver.py:
# granian, or WEB_SERVER=gunicorn with gridwms/gunicorn.conf.py) and the django-q2 cluster, after
# migrating (hosts take turns) and collecting the static files.
#
#   SECRET_KEY=... DATABASE_URL=postgres://... scripts/serve.sh [all|web|worker]
#
#   all     (default) the web server and the worker cluster
#   web     only the web server (a web host; the cycles run on worker hosts)
#   worker  only the worker cluster (a worker host)
# Environment: HOST/PORT or WEB_BIND, WEB_SERVER, WEB_WORKERS, WEB_THREADS, Q_WORKERS, LOG_FORMAT=json,
# SERVE_MIGRATE=0 (skip migrate and schedules), and the settings of docs/operator-guide.md,
# Parameters.
#
# Every process stays in this script's process group: stopping the group (even with SIGKILL)
# stops the whole host. SIGTERM or SIGINT stops it gracefully.
set -euo pipefail
cd "$(dirname "$0")/.."
role="${1:-${SERVE_ROLE:-all}}"
case "$role" in all | web | worker) ;; *)
  echo "usage: scripts/serve.sh [all|web|worker]" >&2
  exit 2
  ;;
esac
export DEBUG=0
py=.venv/bin/python

# Settings refuse to load without SECRET_KEY and DATABASE_URL: the first command says which.
if [ "${SERVE_MIGRATE:-1}" != 0 ]; then
  "$py" manage.py deploy -v0
fi
if [ "$role" != worker ]; then
  "$py" manage.py collectstatic --no-input -v0
fi

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # the web server drains its requests (WEB_GRACEFUL_TIMEOUT); django-q2's cluster may hang on SIGTERM
  # (a known django-q2 bug): whatever is left after the grace period, and its children, get SIGKILL.
  for _ in $(seq 30); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 1
  done
  for pid in "${pids[@]}"; do
    for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do kill -KILL "$child" 2>/dev/null || true; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}
trap stop INT TERM EXIT

if [ "$role" != web ]; then
  "$py" manage.py qcluster &
  pids+=($!)
fi
if [ "$role" != worker ]; then
  "$py" -m gridwms.webserver &
  pids+=($!)
fi
# One of them ending ends the host: a supervisor (systemd, a container runtime) restarts it.
set +e
wait -n "${pids[@]}"
status=$?
stop
exit "$status"
