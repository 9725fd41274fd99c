# cdclake: two commands for a fresh machine (see README.md)
#   make demo   sets up, writes sample landing files, runs the ingest DAG through Airflow, prints the table
#   make test   sets up and runs the tests
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.cdclake-installed
JARS_STAMP := .jars/.fetched

.PHONY: setup demo test lint bench bench-monitoring clean check-java browser

setup: check-java $(STAMP) $(JARS_STAMP) browser

check-java:
	@bash scripts/check_java.sh

# Debian's Chromium for the monitoring page's browser test (playwright's own download is not used)
browser:
	@test -x /usr/bin/chromium || { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	  else echo "warning: /usr/bin/chromium missing, the browser test will skip: sudo apt-get install chromium"; fi; }

$(STAMP): requirements.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found: install Python 3.11"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check uv==0.13.9
	$(VENV)/bin/uv pip install -q -p $(PY) -r requirements.txt
	$(VENV)/bin/uv pip install -q -p $(PY) --no-deps -e .
	@# bytecode now: with PYTHONDONTWRITEBYTECODE set (as on CI machines) every Airflow task, spark-submit
	@# driver and Python worker would otherwise recompile what it imports (6.8 s -> 2.7 s per process here)
	@$(PY) -m compileall -q -j 0 $(VENV)/lib >/dev/null 2>&1 || true
	@touch $(STAMP)

$(JARS_STAMP): jars/pom.xml
	@command -v mvn >/dev/null || { echo "error: Maven (mvn) is needed to fetch the Iceberg/SQLite jars: apt-get install maven"; exit 1; }
	mvn -q -B -f jars/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/.jars -DincludeScope=runtime
	@touch $(JARS_STAMP)

demo: setup
	$(PY) -m cdclake.demo

test: setup
	$(PY) -m pytest -q

# throughput, memory and correctness of every format (about 1M changes each; BENCH_ARGS="--quick" for 100k)
bench: setup
	$(PY) -m cdclake.bench $(BENCH_ARGS)

# server time of the monitoring pages on 500 tables x 1,000 batches of reports (docs/monitoring.md)
bench-monitoring: setup
	$(PY) benchmarks/scripts/monitoring_page.py $(BENCH_ARGS)

lint: setup
	$(VENV)/bin/ruff check cdclake dags spark_jobs plugins tests
	$(VENV)/bin/ruff format --check cdclake dags spark_jobs plugins tests

clean:
	rm -rf var .pytest_cache .hypothesis
