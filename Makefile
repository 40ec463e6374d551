# gridwms: `make run` (dashboard with a demo world, on the checkout's embedded PostgreSQL unless
# DATABASE_URL names a server), `make test` (the whole suite) and
# `make serve` (production: gunicorn and the workers; SECRET_KEY and DATABASE_URL required).
PY ?= python3
VENV = .venv
BIN = $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install clients run serve worker test lint bench db-start db-stop clean

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# Debian's Chromium for the browser tests (Playwright cannot download browsers here).
install: $(BIN)/.installed clients
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing (apt-get install chromium): browser tests will be skipped"; fi; \
	fi

# The clients grids already run (DiracX's CLI, PanDA's pilot and client), unmodified from the
# registry, each in its own environment under .clients/ (scripts/install_clients.sh).
clients:
	PY=$(PY) bash scripts/install_clients.sh

# Migrate, load the demo world once, create the schedules, then run the django-q2 cluster and
# the web server together; Ctrl-C stops both.
# Without DATABASE_URL the embedded PostgreSQL (.pgdata/) is started first and stopped with Ctrl-C;
# a second `make run` reuses its data.
run: $(BIN)/.installed clients
	HOST=$(HOST) PORT=$(PORT) bash scripts/run.sh

# Production on one host: migrate, collectstatic, gunicorn and the django-q2 cluster, DEBUG off
# (docs/operator-guide.md, Production). ROLE=web or ROLE=worker runs one half (several hosts,
# one database).
serve: $(BIN)/.installed
	HOST=$(HOST) PORT=$(PORT) bash scripts/serve.sh $(or $(ROLE),all)

worker: $(BIN)/.installed
	$(BIN)/python manage.py qcluster

test: install
	bash scripts/pytest.sh

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python manage.py spectacular --validate --fail-on-warn --file /tmp/gridwms-openapi.yml

# The embedded PostgreSQL by hand (manage.py commands without DATABASE_URL need it running).
db-start: $(BIN)/.installed
	$(BIN)/python -m gridwms.embedded_pg start

db-stop: $(BIN)/.installed
	$(BIN)/python -m gridwms.embedded_pg stop

bench: $(BIN)/.installed
	$(BIN)/python bench/load.py --scale small

clean: db-stop
	rm -rf $(VENV) .pgdata staticfiles *.egg-info
