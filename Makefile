# The two commands of the README: `make report` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
BIN := $(VENV)/bin
RUNS ?= runs
PUBLIC ?= public
SUITE ?=
# Runs of `make report` are filed under one local label, which imagebench.toml compares
# with the archived runs (runs/this-machine/ is not committed).
LABEL ?= this-machine
# The archived run `make report` compares this machine with, in its last lines.
COMPARE_WITH ?= torch-2.14.1-cpu

.PHONY: setup setup-test report record site test clean

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh --test

## Set up, record a run on this machine with the default suite, build the site; each step says
## what it does and how long it took, and the end says where everything is and what to run next.
report:
	@start=$$(date +%s); \
	step() { printf '\033[1m[report %s]\033[0m %s\n' "$$1" "$$2"; }; \
	took() { echo "  ($$(( $$(date +%s) - $$1 )) s)"; }; \
	t=$$(date +%s); step 1/3 "setting up $(VENV) (torch reused when importable, else installed)"; \
	bash scripts/setup.sh || exit $$?; took $$t; \
	t=$$(date +%s); step 2/3 "recording a run of this machine into $(RUNS)/$(LABEL)/ (progress and an ETA on stderr)"; \
	out=$$(mktemp); \
	$(BIN)/collector run --out $(RUNS) $(if $(SUITE),--suite $(SUITE)) $(if $(LABEL),--label $(LABEL)) | tee "$$out"; \
	code=$${PIPESTATUS[0]}; run=$$(tail -n 1 "$$out"); rm -f "$$out"; [ "$$code" = 0 ] || exit $$code; took $$t; \
	t=$$(date +%s); step 3/3 "building the site into $(PUBLIC)/ (every comparison of imagebench.toml)"; \
	$(BIN)/reporter build --runs $(RUNS) --public $(PUBLIC) || exit $$?; took $$t; \
	echo; \
	echo "Done in $$(( $$(date +%s) - start )) s."; \
	echo "  run folder:  $$run"; \
	echo "  site:        $(PUBLIC)/index.html"; \
	echo "  serve it:    $(BIN)/python -m http.server -d $(PUBLIC)   then open http://127.0.0.1:8000/"; \
	echo "  compare:     $(BIN)/reporter compare $(COMPARE_WITH) $(LABEL)   (--format markdown for a pull request, --fail-on worse for CI)"

record:
	$(BIN)/collector run --out $(RUNS) $(if $(SUITE),--suite $(SUITE)) $(if $(LABEL),--label $(LABEL))

site:
	$(BIN)/reporter build --runs $(RUNS) --public $(PUBLIC)

## Set up, then run the whole test suite.
test: setup-test
	$(BIN)/python -m pytest -q

clean:
	rm -rf public build .pytest_cache
