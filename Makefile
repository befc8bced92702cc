# Quick start targets (README.md). Each target creates the virtual environment and installs the
# project on first use; later runs reuse it (the stamp file tracks pyproject.toml).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell $(PY) -c "import hashlib,sys;print(hashlib.sha256(open('pyproject.toml','rb').read()).hexdigest()[:12])")
KERNEL ?= examples/regression/qkv_attention.hlo
EXTRAS ?= test,xla,rtl,fuzz
PYTEST_ARGS ?=

.PHONY: demo run test test-all venv clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	command -v yosys >/dev/null || ./scripts/install-yosys.sh
	command -v chromedriver >/dev/null || ./scripts/install-chromium.sh
	rm -f $(VENV)/.installed-* && touch $@

venv: $(STAMP)

## The main job: a one-minute differential campaign (random kernels compiled for gemmini, qkv and
## amx, run on every backend available here, compared with the reference interpreter); it prints
## the outcomes and where the results are (build/fuzz/demo.sqlite, reproducers in
## build/fuzz/demo.sqlite.repro/, the report page build/fuzz/demo.html and summary demo.md) and exits 1 when new failure buckets appeared (docs/fuzzing.md).
demo: $(STAMP)
	$(BIN)/accv fuzz --target gemmini,qkv,amx --minutes 1 --workers 2 --db build/fuzz/demo.sqlite

## Evaluate one kernel with the reference interpreter: `make run KERNEL=path/to/kernel.hlo`.
run: $(STAMP)
	$(BIN)/accv run $(KERNEL) --seed 0

## The default test run (slow tests excluded; `make test PYTEST_ARGS=--runslow` includes them).
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

test-all: $(STAMP)
	$(BIN)/python -m pytest -n 2 --runslow $(PYTEST_ARGS)

clean:
	rm -rf build .pytest_cache .hypothesis
