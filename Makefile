# One-command set-up: `make run` and `make test` create .venv if missing and install the package.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= twolayer-out
PYTEST_ARGS ?=

# The MNIST test split shipped beside the project (../shared/data/mnist) is used for tests and
# quick runs when present and TWOLAYER_DATA is not set (see README, "MNIST data").
ifneq ($(wildcard ../shared/data/mnist/t10k-images-idx3-ubyte.gz),)
export TWOLAYER_DATA ?= $(abspath ../shared/data/mnist)
endif

.PHONY: run test bench install clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,sweep]"
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/twolayer reproduce --scale quick --out $(OUT)

# The browser test runs when Chromium is installed (.ci/run installs it); otherwise it is skipped.
test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
