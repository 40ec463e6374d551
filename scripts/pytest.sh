#!/usr/bin/env bash
# Run the test suite; "no tests collected" (exit 5) is a failure, never a silent pass.
set -uo pipefail
cd "$(dirname "$0")/.."
# Without DATABASE_URL: the checkout's embedded PostgreSQL (started here if it is not running,
# and stopped again afterwards if this script started it). The suite creates its own database.
embedded_started=0
if [ -z "${DATABASE_URL:-}" ]; then
  .venv/bin/python -m gridwms.embedded_pg status >/dev/null || embedded_started=1
  DATABASE_URL="$(.venv/bin/python -m gridwms.embedded_pg start)" || exit 1
  export DATABASE_URL
fi
# Two workers (PYTEST_WORKERS): one test process leaves the second core mostly idle, the database
# server's share included. A test file stays on one worker, so its module-scoped worlds are built
# once. --durations: the slowest, to keep CI within its 30 minutes.
.venv/bin/pytest -n "${PYTEST_WORKERS:-2}" --dist loadfile --durations=25 "$@"
rc=$?
[ "$embedded_started" = 1 ] && .venv/bin/python -m gridwms.embedded_pg stop
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
