#!/usr/bin/env bash
# The clients a grid already runs, installed unmodified from the package registry, each in its own
# environment under .clients/ (their dependencies never meet the project's): the tests drive
# them against a live gridwms, and `make run`'s PanDA pool launches the real pilot.
#   .clients/diracx/bin/dirac          DiracX's command line (diracx-cli)
#   .clients/panda-client/bin/python   PanDA's client library (pandaclient)
#   .clients/panda-pilot/pilot.py      PanDA's pilot, from its sdist (the wheel has no launcher)
#   .clients/openapi-client/bin/openapi-python-client   generates a client from /api/schema/
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
DIRACX_CLI=diracx-cli==0.7.0
PANDA_CLIENT=panda-client==2.2.0
PANDA_PILOT=panda-pilot==3.7.0.36
mkdir -p .clients

venv() { # venv NAME REQUIREMENT: a virtualenv with one requirement, rebuilt if it changed
  local dir=.clients/$1 req=$2
  if [ "$(cat "$dir/.installed" 2>/dev/null)" = "$req" ]; then return; fi
  rm -rf "$dir"
  "$PY" -m venv "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check "$req"
  echo "$req" > "$dir/.installed"
}

venv diracx "$DIRACX_CLI"
venv panda-client "$PANDA_CLIENT"
# A client generated from gridwms's own OpenAPI schema (tests/test_openapi_client.py).
venv openapi-client "openapi-python-client==0.29.1"

dir=.clients/panda-pilot
if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$PANDA_PILOT" ]; then
  rm -rf "$dir" .clients/panda-pilot-dl
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    -d .clients/panda-pilot-dl "$PANDA_PILOT"
  mkdir -p "$dir"
  tar -xzf .clients/panda-pilot-dl/*.tar.gz -C "$dir" --strip-components=1
  rm -rf .clients/panda-pilot-dl
  echo "$PANDA_PILOT" > "$dir/.installed"
fi
# The pilot runs as its own unix user (it kills its user's orphans when it ends): it must be
# able to read its code.
chmod -R a+rX .clients
# That user (pilots/panda_launch.py PILOT_USER; the launcher also creates it when missing).
if [ "$(id -u)" = 0 ] && ! id gridpilot >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin gridpilot
fi
