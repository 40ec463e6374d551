#!/usr/bin/env bash
# `make run`: the embedded PostgreSQL unless DATABASE_URL is set, migrate, the demo world once,
# then the django-q2 cluster, the simulated grid and the web server together; stopping one (or
# Ctrl-C) stops them all, and the embedded server with them.
# django-q2's cluster may hang on SIGTERM (a known django-q2 bug), so it gets SIGKILL after a
# grace period.
set -uo pipefail
cd "$(dirname "$0")/.."
host="${HOST:-127.0.0.1}"
port="${PORT:-8000}"
py=.venv/bin/python
embedded=0
if [ -z "${DATABASE_URL:-}" ]; then
  DATABASE_URL="$("$py" -m gridwms.embedded_pg start)" || exit 1
  export DATABASE_URL
  embedded=1
fi
stop_database() {
  [ "$embedded" = 1 ] && "$py" -m gridwms.embedded_pg stop
}
trap stop_database EXIT
"$py" manage.py migrate --no-input -v0 || exit 1
"$py" manage.py demo --if-empty --local-url "http://$host:$port" || exit 1
"$py" manage.py brokerage_demo --if-empty || exit 1
"$py" manage.py setup_schedules || exit 1
echo "gridwms on http://$host:$port/  (admin / admin; users alice, bob, carol, dave, erin / gridwms)"

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
  wait 2>/dev/null
  stop_database
  exit 0
}
trap stop INT TERM EXIT

# The web server with DEBUG off (scripts/run_web.sh): the site's own 404 and 500 pages.
bash scripts/run_web.sh "$host" "$port" &
web=$!
wait -n "$qcluster" "$web" "$simulator"
