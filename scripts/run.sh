#!/usr/bin/env bash
# Start the django-q2 cluster, the simulated grid and the web server together; stopping one
# stops them all.
# django-q2's cluster may hang on SIGTERM (django-q2#66), so it gets SIGKILL after a grace period.
set -uo pipefail
cd "$(dirname "$0")/.."
host="${HOST:-127.0.0.1}"
port="${PORT:-8000}"
# Every process reads the simulated grid's shared clock (staff pause it on /simulation/).
export GRIDWMS_SIMULATED_CLOCK=1

setsid .venv/bin/python manage.py qcluster &
qcluster=$!
.venv/bin/python manage.py simulate &
simulator=$!

stop() {
  trap - INT TERM EXIT
  kill -TERM -- "-$qcluster" 2>/dev/null
  for _ in 1 2 3 4 5; do kill -0 "$qcluster" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$qcluster" 2>/dev/null
  kill -TERM "$simulator" 2>/dev/null
  [ -n "${web:-}" ] && kill -TERM "$web" 2>/dev/null
  exit 0
}
trap stop INT TERM EXIT

.venv/bin/python manage.py runserver --noreload "$host:$port" &
web=$!
wait -n "$qcluster" "$web" "$simulator"
