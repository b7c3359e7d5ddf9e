# Two entry points matter: `make run` and `make test` (see README).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench conformance clean jvm demo

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The C record walk is an optional extension: a failed build would leave an old .so in place
# (or none, silently), so it is removed first and its import checked after.
$(STAMP): pyproject.toml storage/_record_walk.c | $(BIN)/python
	rm -f storage/_record_walk*.so
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/python -c 'import minibroker.storage._record_walk' || \
	  { echo "storage/_record_walk.c did not build: is a C compiler installed?" >&2; exit 1; }
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/minibroker --host 127.0.0.1 --port 9092 --data-dir ./data

# Everything: the pytest suite (unit, clients, Spark, Java), then the differential run against a
# reference Apache Kafka.
test: $(STAMP) jvm
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
	$(BIN)/python -m conformance $(CONFORMANCE_ARGS)

# ruff (lint and format check) and mypy, configured in pyproject.toml. mypy reads the packages
# through .lint/minibroker, a tree of links laid out as the wheel installs them.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	rm -rf .lint && mkdir -p .lint/minibroker
	for f in minibroker/*.py; do ln -s ../../$$f .lint/minibroker/; done
	for d in broker coordinator protocol storage pipelines; do ln -s ../../$$d .lint/minibroker/$$d; done
	cd .lint && ../$(BIN)/mypy --config-file ../pyproject.toml

# Differential run against a reference Apache Kafka (needs java and mvn; see conformance/README.md).
conformance: $(STAMP) jvm
	$(BIN)/python -m conformance $(CONFORMANCE_ARGS)

# Spark's Kafka connector and the Java client checks, fetched with Maven into ~/.cache/minibroker/jvm
jvm:
	bash jvm/fetch.sh

demo: $(STAMP) jvm
	$(BIN)/python -m minibroker.pipelines demo

# Side-by-side benchmark (minibroker and a reference Apache Kafka; needs java and mvn for Kafka;
# BENCH_ARGS="--brokers minibroker" for quick profiling). Never part of `make test`.
$(VENV)/.bench-installed: pyproject.toml storage/_record_walk.c | $(STAMP)
	$(BIN)/pip install -q -e '.[test,bench]'
	touch $@

BENCH_ARGS ?= --curves partitions,connections,producers,data,groups
bench: $(VENV)/.bench-installed
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) data *.egg-info build storage/_record_walk*.so
