# One-command set-up: `make run` and `make test` create .venv if missing and install the package.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= twolayer-out
PYTEST_ARGS ?=

.PHONY: run test bench install clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/twolayer reproduce --scale quick --out $(OUT)

# The browser test runs when Chromium is installed (.ci/run installs it); otherwise it is skipped.
test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/step_speed.py

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
