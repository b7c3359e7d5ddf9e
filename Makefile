# Two entry points matter: `make run` and `make test` (see README).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# `make run` needs only the broker's own dependencies (a 60 MB .venv), not the test set (730 MB)
RUN_STAMP := $(VENV)/.installed-run

# `make run PORT=9093 DATA=/tmp/other HOST=0.0.0.0`. Taken from the make command line only, never
# from the environment: tcsh exports HOST as the machine's name, which would make `make run`
# listen on a public address.
from_command_line = $(if $(filter command line,$(origin $(1))),$($(1)),$(2))
RUN_HOST := $(call from_command_line,HOST,127.0.0.1)
RUN_PORT := $(call from_command_line,PORT,9092)
RUN_DATA := $(call from_command_line,DATA,./data)

.PHONY: run test lint bench conformance clean jvm demo dist

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The C record walk is an optional extension: a failed build would leave an old .so in place
# (or none, silently), so it is removed first and its import checked after.
# The first time this downloads about 730 MB (pyspark alone is 485 MB): pip shows its progress.
$(STAMP): pyproject.toml storage/_record_walk.c | $(BIN)/python
	@echo "== installing minibroker with the test dependencies into $(VENV)"
	@echo "== (first run: about 730 MB to download, then Spark's, Kafka's and Kafka Streams' jars, 30+ minutes in all)"
	rm -f storage/_record_walk*.so
	$(BIN)/pip install --progress-bar on -e '.[test]'
	$(BIN)/python -c 'import minibroker.storage._record_walk' || \
	  { echo "storage/_record_walk.c did not build: is a C compiler installed?" >&2; exit 1; }
	touch $(STAMP) $(RUN_STAMP)

# The broker alone. Without a C compiler the optional record walk is skipped (the broker logs
# one warning and uses the Python walk).
$(RUN_STAMP): pyproject.toml storage/_record_walk.c | $(BIN)/python
	@echo "== installing minibroker and the broker's dependencies into $(VENV)"
	$(BIN)/pip install -q -e .
	touch $(RUN_STAMP)

run: $(RUN_STAMP)
	$(BIN)/minibroker --host $(RUN_HOST) --port $(RUN_PORT) --data-dir $(RUN_DATA)

# A wheel and an sdist in dist/ (`pip install dist/minibroker-*.whl` anywhere with the same Python
# version and platform; the sdist builds anywhere, with or without a C compiler).
# `build` is installed into BUILD_VENV (.venv unless given: `make dist BUILD_VENV=/tmp/b`, an
# existing venv, keeps .venv as it is).
DIST ?= dist
BUILD_VENV ?= $(VENV)
dist: | $(BUILD_VENV)/bin/python
	rm -rf $(DIST)
	$(BUILD_VENV)/bin/pip install -q build
	$(BUILD_VENV)/bin/python -m build --outdir $(DIST) .

# Everything: the pytest suite (unit, clients, Spark, Java), then the differential run against a
# reference Apache Kafka.
test: $(STAMP) jvm
	@echo "== running the test suite (about 20 minutes on 2 cores; PYTEST_ARGS='-x -k name' to narrow it)"
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
	$(BIN)/python -m conformance $(CONFORMANCE_ARGS)
	$(BIN)/python -m conformance $(CONFORMANCE_TV1_ARGS)

# ruff (lint and format check) and mypy, configured in pyproject.toml. mypy reads the packages
# through .lint/minibroker, a tree of links laid out as the wheel installs them.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	rm -rf .lint && mkdir -p .lint/minibroker
	for f in minibroker/*.py minibroker/control; do ln -s ../../$$f .lint/minibroker/; done
	for d in broker common coordinator protocol storage pipelines; do ln -s ../../$$d .lint/minibroker/$$d; done
	cd .lint && ../$(BIN)/mypy --config-file ../pyproject.toml

# The transaction cases (and the Java and librdkafka ones, which take the path the level selects)
# again with transaction.version=1 finalized on both brokers: the classic flow a downgraded
# cluster or an older client runs.
CONFORMANCE_TV1_ARGS ?= --transaction-version 1 --only 'transactions/*' --only 'init_producer_id*' --only 'java*' --only 'clients/*'

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
# then consumer groups, classic against consumer protocol (bench/consumer_groups.py, about 2 minutes)
CONSUMER_GROUPS_ARGS ?=
# then share groups, consume throughput and broker CPU per record (bench/share_groups.py)
SHARE_GROUPS_ARGS ?=
bench: $(VENV)/.bench-installed jvm
	$(BIN)/python -m bench $(BENCH_ARGS)
	$(BIN)/python -m bench.consumer_groups $(CONSUMER_GROUPS_ARGS)
	$(BIN)/python -m bench.share_groups $(SHARE_GROUPS_ARGS)

clean:
	rm -rf $(VENV) data *.egg-info build dist storage/_record_walk*.so
