# benchlab: `make run` starts it with a ready lab, `make test` runs the whole suite.
# Every step is idempotent: it installs or creates only what is missing.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run test test-fast static-files bench lint format setup system-packages pg-sources services local-state assets lock clean-venv

# A lab to try at once: the virtual lab, and runs allowed on this machine too (unless overridden).
run: setup pg-sources
	BENCHLAB_RUNS_ON_THIS_MACHINE=$${BENCHLAB_RUNS_ON_THIS_MACHINE:-yes} scripts/prepare
	scripts/lab-ensure
	scripts/serve

# pytest keeps the test modules it rewrites (and Python its bytecode) in var/pycache, even where
# the environment says PYTHONDONTWRITEBYTECODE: rewriting every test module again took 10 s a run.
PYTEST = PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/var/pycache $(VENV)/bin/pytest

# Everything, on a pytest-xdist worker per core and one more: what uses the virtual lab, a Celery
# worker or benchlab's OS user runs in two lines (conftest: this machine's, and a second virtual
# lab's), each on a worker of its own, one test after another; the rest beside them. The lines
# mostly wait on their labs, hence the extra worker. One line alone took 38-40 minutes (27 Nov 2026).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: setup pg-sources $(VENV)/.dev-deps static-files
	$(MAKE) --no-print-directory lint
	$(PYTEST) -n $(TEST_WORKERS) --dist loadgroup

# What needs no virtual lab, Celery worker, uvicorn nor browser (conftest marks those from the
# code): the tier to run while editing, on a pytest-xdist worker per core as make test. 1.9-3.1
# minutes on the 2-core VM, not yet the minute it should take (ARCHITECTURE.md, Tests).
test-fast: setup $(VENV)/.dev-deps static-files
	HYPOTHESIS_PROFILE=fast $(PYTEST) -n auto --dist loadgroup -m "not lab and not worker and not browser"

# The pages' static files where the web server serves them from (var/static), as a deployment
# has them: tests follow links to them (the favicon, the vendored libraries).
static-files: setup
	$(PY) manage.py collectstatic --noinput --verbosity 0

# Measurements, not tests: side by side in one run, medians of interleaved repeats.
# Every benchmark runs even when an earlier one misses its target; make fails at the end if any did.
BENCHMARKS = sample_storage page_speed changepoints ingest live_viewers live_latency harness_overhead campaign_efficiency cleanup_sweep
bench: setup
	@status=0; for name in $(BENCHMARKS); do echo "== $$name"; $(PY) -m benchmarks.$$name || status=1; done; \
	$(PY) -m benchmarks.report; exit $$status

lint: $(VENV)/.dev-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: $(VENV)/.dev-deps
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

setup: system-packages services $(VENV)/.run-deps $(VENV)/.cli local-state assets

system-packages:
	scripts/install-system-packages

# Debian's source of the installed PostgreSQL, for builds with other page sizes (runs/lab/pgbuild/build.py):
# fetched by apt into /var/cache/benchlab/pg-sources once; the virtual lab's hosts build from it offline.
pg-sources: system-packages
	scripts/fetch-pg-source

services: system-packages
	scripts/start-services

$(PY):
	$(PYTHON) -m venv $(VENV)

# Stamps record which pinned requirements the virtualenv holds; editing a file reinstalls.
$(VENV)/.run-deps: requirements.txt | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.dev-deps: requirements-dev.txt $(VENV)/.run-deps
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

# The `benchlab` command (cli/, README "From a shell"): editable, so it runs this checkout's code;
# it has no dependencies (--no-deps), and pip fetches its pinned build backend for the build only.
$(VENV)/.cli: cli/pyproject.toml $(VENV)/.run-deps
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e cli
	touch $@

local-state: $(VENV)/.run-deps services
	scripts/setup-local-state

# Front-end libraries, pinned in package-lock.json: npm ci (no install scripts run), then their
# browser builds and licences copied into static/vendor/ (gitignored). The stamp lives in
# static/vendor/, so deleting that directory or changing the lock installs them again.
assets: static/vendor/.installed

static/vendor/.installed: package-lock.json | system-packages
	npm ci --ignore-scripts --no-audit --no-fund
	scripts/vendor-assets
	touch $@

# Re-pin every Python dependency from pyproject.toml (needs network access to PyPI).
lock:
	$(PYTHON) -m venv /tmp/benchlab-lock && /tmp/benchlab-lock/bin/pip install --quiet pip-tools
	/tmp/benchlab-lock/bin/pip-compile --quiet --strip-extras --allow-unsafe --no-emit-index-url \
	  --no-emit-find-links -o requirements.txt pyproject.toml
	/tmp/benchlab-lock/bin/pip-compile --quiet --strip-extras --allow-unsafe --no-emit-index-url \
	  --no-emit-find-links --extra dev -o requirements-dev.txt pyproject.toml

clean-venv:
	rm -rf $(VENV)
