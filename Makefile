# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv and
# installs what it needs (torch is pinned first: an unpinned torch pulls GBs of CUDA wheels).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kgdb-installed
LINT_DEPS := tests/neo4j_lint/node_modules/.kgdb-installed

.PHONY: demo test install lint-deps check bench clean neo4j neo4j-stop neo4j-status plugin

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

lint-deps: $(LINT_DEPS)

$(LINT_DEPS): tests/neo4j_lint/package.json tests/neo4j_lint/package-lock.json
	npm ci --prefix tests/neo4j_lint --no-audit --no-fund --loglevel=error
	touch $(LINT_DEPS)

demo: $(STAMP)
	$(VENV)/bin/kgdb demo

check: $(STAMP)
	$(PY) -m ruff check kgdb tests
	$(PY) -m mypy kgdb

test: $(STAMP) $(LINT_DEPS) check plugin
	$(PY) -m pytest

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
# data and logs in .neo4j/ (ignored). Prints KGDB_URI, NEO4J_USERNAME and NEO4J_PASSWORD:
#   eval "$$(make -s neo4j)"
NEO4J_HOME ?= .neo4j

neo4j:
	@$(MAKE) -s install >&2
	@$(VENV)/bin/kgdb neo4j start --home $(NEO4J_HOME)

neo4j-stop:
	@$(MAKE) -s install >&2
	@$(VENV)/bin/kgdb neo4j stop --home $(NEO4J_HOME)

neo4j-status:
	@$(MAKE) -s install >&2
	@$(VENV)/bin/kgdb neo4j status --home $(NEO4J_HOME)

bench: $(STAMP)
	$(VENV)/bin/kgdb bench load ../shared/data/metaqa/kb.txt --cold --json
	$(VENV)/bin/kgdb bench load ../shared/data/metaqa/kb.txt --json

clean:
	rm -rf $(VENV) tests/neo4j_lint/node_modules .pytest_cache .mypy_cache .ruff_cache \
	  neo4j-plugin/target
