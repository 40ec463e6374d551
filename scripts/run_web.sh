#!/usr/bin/env bash
# The web server of `make run` (scripts/run.sh starts it): `run_web.sh HOST PORT`, Django's
# runserver with DEBUG off, as `make serve` runs: a missing page or a failure shows the site's own
# framed 404 and 500 pages, not Django's debug pages (tracebacks go to the terminal's log). Static
# files are still served from the checkout as they are now (STATIC_MANIFEST=0: whitenoise reads
# the finders and follows edits; nothing to collect), and the development key stays, so that a
# demo's sessions survive a restart.
set -euo pipefail
cd "$(dirname "$0")/.."
host="$1"
port="$2"
export DEBUG=0 STATIC_MANIFEST=0
export SECRET_KEY="${SECRET_KEY:-gridwms-development-key-change-me-in-production-0123456789}"
export ALLOWED_HOSTS="${ALLOWED_HOSTS:-127.0.0.1,localhost,$host}"
exec .venv/bin/python manage.py runserver --noreload "$host:$port"
