# cdclake: two commands for a fresh machine (see README.md)
#   make demo   sets up, writes sample landing files, runs the ingest DAG through Airflow, prints the table
#   make test   sets up and runs the tests
#   make stack-test  the docker-compose topology as local processes, driven as users do (docs/docker.md)
#   make stack-scale the same topology with two Spark workers, at scale (2M changes, 50 tables; issue 58)
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.cdclake-installed
JARS_STAMP := .jars/.fetched
JVM_ARCHIVE := .jars/spark-driver.jsa

.PHONY: setup demo test fuzz stack-test stack-scale lint bench bench-monitoring clean check-java test-deps

NATIVE_STAMP := $(VENV)/.cdclake-native

setup: check-java $(STAMP) $(JARS_STAMP) $(JVM_ARCHIVE) $(NATIVE_STAMP)
	@# the project's own bytecode too (an editable install is not compiled; with PYTHONDONTWRITEBYTECODE set,
	@# each decode process and spark-submit driver recompiled cdclake: 0.25 s a process); only changed files
	@$(PY) -m compileall -q -j 0 cdclake dags spark_jobs plugins >/dev/null 2>&1 || true

check-java:
	@bash scripts/check_java.sh

# Debian packages only the tests need: Chromium (browser tests; playwright's own download is not used)
# and the PostgreSQL server (the stack test starts its own cluster). `make demo` needs neither.
TEST_DEBS := $(if $(wildcard /usr/bin/chromium),,chromium) $(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql)
test-deps:
	@test -z "$(strip $(TEST_DEBS))" || { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(TEST_DEBS); \
	  else echo "warning: missing Debian packages, the browser / stack tests will fail: sudo apt-get install $(TEST_DEBS)"; fi; }

$(STAMP): requirements.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found: install Python 3.11"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check uv==0.13.9
	$(VENV)/bin/uv pip install -q -p $(PY) -r requirements.txt
	$(VENV)/bin/uv pip install -q -p $(PY) --no-deps -e .
	@# pyspark is an sdist: every fresh clone builds it into a new ~1.2 GB revision of uv's cache, which
	@# filled this machine's disk after ~45 installs (CI failed on it); keep only what is still reachable
	-@$(VENV)/bin/uv cache prune -q
	@# bytecode now: with PYTHONDONTWRITEBYTECODE set (as on CI machines) every Airflow task, spark-submit
	@# driver and Python worker would otherwise recompile what it imports (6.8 s -> 2.7 s per process here)
	@$(PY) -m compileall -q -j 0 $(VENV)/lib >/dev/null 2>&1 || true
	@touch $(STAMP)

$(JARS_STAMP): jars/pom.xml
	@command -v mvn >/dev/null || { echo "error: Maven (mvn) is needed to fetch the Iceberg/SQLite jars: apt-get install maven"; exit 1; }
	mvn -q -B -f jars/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/.jars -DincludeScope=runtime
	@touch $(JARS_STAMP)

# the compiled helpers (cdclake/native: C, no dependency but a C compiler), built in place, each module replaced
# whole; the list of modules is cdclake/native/build.py's, which setup.py declares as the package's optional
# ext_modules (pip install . and a wheel carry them). Without a compiler the build says so and the Python paths run
$(NATIVE_STAMP): $(STAMP) $(wildcard cdclake/native/*.c) cdclake/native/build.py
	$(PY) -m cdclake.native.build
	@touch $(NATIVE_STAMP)

# the spark-submit driver's class-data-sharing archive (cdclake/runtime/jvm_archive.py): each batch step's JVM starts
# about 6 s sooner; a warning, not a failure, if it cannot be built
$(JVM_ARCHIVE): $(STAMP) $(JARS_STAMP) cdclake/runtime/jvm_archive.py
	$(PY) -m cdclake.runtime.jvm_archive

demo: setup
	$(PY) -m cdclake.demo

test: setup test-deps
	$(PY) -m pytest -q

# the differential fuzz tests (tests marked `fuzz`) with the long profile: fresh seed (printed; CDCLAKE_FUZZ_SEED
# repeats a run), at least 1,000 examples per law and per format (CDCLAKE_FUZZ_EXAMPLES raises it), failures
# printed shrunk with their reproduce blob (tests/fuzzing.py)
fuzz: setup
	@seed=$${CDCLAKE_FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "make fuzz: hypothesis seed $$seed (CDCLAKE_FUZZ_SEED=$$seed make fuzz repeats this run)"; \
	CDCLAKE_HYPOTHESIS=fuzz $(PY) -m pytest -q -m fuzz --hypothesis-seed=$$seed --hypothesis-show-statistics $(FUZZ_ARGS)

# PostgreSQL, S3 (moto), Spark master + worker, Airflow api-server + scheduler + dag-processor as local
# processes from docker-compose.yaml's settings; screenshot and service logs in var/stack-test/
stack-test: setup test-deps
	$(PY) -m pytest -q -m stack tests/stack

# the same stack with two one-core Spark workers: two vendor formats, 2,000,000 changes over 50 tables in two
# batches of several S3 files each, decoded on the executors and folded on the workers; every table checked
# against the generator's model; wall times and events/s per core in var/stack-scale/report.json. Smaller:
# CDCLAKE_SCALE_CHANGES=50000 CDCLAKE_SCALE_TABLES=8 make stack-scale (tests/scale/test_stack_scale.py)
stack-scale: setup test-deps
	$(PY) -m pytest -q -s -m scale tests/scale

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
