# The two commands of the README: `make report` and `make test`.
VENV ?= .venv
BIN := $(VENV)/bin
RUNS ?= runs
SUITE ?=
# Runs of `make report` are filed under one local label, which imagebench.toml compares
# with the archived runs (runs/this-machine/ is not committed).
LABEL ?= this-machine

.PHONY: setup setup-test report record site test clean

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh --test

## Record a run on this machine with the embedded default suite, then build the site.
report: setup record site

record:
	$(BIN)/collector run --out $(RUNS) $(if $(SUITE),--suite $(SUITE)) $(if $(LABEL),--label $(LABEL))

site:
	$(BIN)/reporter build --runs $(RUNS)

## Set up, then run the whole test suite.
test: setup-test
	$(BIN)/python -m pytest -q

clean:
	rm -rf public build .pytest_cache
