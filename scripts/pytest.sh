#!/usr/bin/env bash
# Run the test suite; "no tests collected" (exit 5) is a failure, never a silent pass.
set -uo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pytest --durations=25 "$@"  # the slowest, to keep CI within its 30 minutes
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
