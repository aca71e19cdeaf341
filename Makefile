# One-command set-up: `make run` and `make test` create .venv if missing and install the package.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= twolayer-out
# the suite runs on PYTEST_WORKERS processes (pytest-xdist); PYTEST_WORKERS=0 runs it in this one
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?= -n $(PYTEST_WORKERS) --durations=30

# The MNIST test split shipped beside the project (../shared/data/mnist) is used for tests and
# quick runs when present and TWOLAYER_DATA is not set (see README, "MNIST data").
ifneq ($(wildcard ../shared/data/mnist/t10k-images-idx3-ubyte.gz),)
export TWOLAYER_DATA ?= $(abspath ../shared/data/mnist)
endif

.PHONY: run test test-default-install bench install clean docs docs-check paper

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,sweep,docs]"
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/twolayer reproduce --scale quick --out $(OUT)

# The browser test runs when Chromium is installed (.ci/run installs it); otherwise it is skipped.
# Python writes its bytecode caches (__pycache__, git-ignored) even where the environment sets
# PYTHONDONTWRITEBYTECODE: the suite starts dozens of Python processes (pytest workers, CLI commands,
# reproduce workers) that import the same modules, and each compiled them again (collection 10.7-12.0 s
# without the caches, 6.8-7.2 s with them).
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q $(PYTEST_ARGS)

# A default install (`pip install .`, no extras) must run its own main job: a small `reproduce` target
# that includes a sweep experiment (its results table needs pandas, a core dependency; without the
# optional pyarrow the table is CSV only). Built in a second venv; pip's cache keeps it quick.
DEFAULT_VENV := .venv-default
test-default-install:
	rm -rf $(DEFAULT_VENV)
	$(PYTHON) -m venv $(DEFAULT_VENV)
	$(DEFAULT_VENV)/bin/python -m pip install --quiet .
	@! $(DEFAULT_VENV)/bin/python -c "import pyarrow" 2>/dev/null || { echo "pyarrow is in the default install"; exit 1; }
	$(DEFAULT_VENV)/bin/twolayer reproduce sweeps/fit-time --scale quick --out $(DEFAULT_VENV)/reproduce-out

# The docs site (MkDocs, Material theme, mkdocstrings): built offline (no fonts or scripts fetched) into site/.
# docs-check builds it with --strict (broken links, missing API pages and docstring warnings fail), as CI does.
export NO_MKDOCS_2_WARNING := 1
docs-check: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet

docs: docs-check
	$(BIN)/mkdocs serve --no-livereload

# One paper at paper scale, in the background with a log (PAPER=min2024 | lyu2021 | multiindex2026), then its
# reference: benchmarks/reference/$(PAPER)-paper/{claims,summary}.json from that one run on this commit.
PAPER ?= min2024
PAPER_OUT ?= paper-out/$(PAPER)
paper: $(STAMP)
	@mkdir -p $(PAPER_OUT)
	@echo "reproducing $(PAPER) at paper scale in the background; log: $(PAPER_OUT).log"
	@nohup sh -c '$(BIN)/twolayer reproduce $(PAPER) --scale paper --out $(PAPER_OUT); code=$$?; \
	  mkdir -p benchmarks/reference/$(PAPER)-paper && \
	  cp $(PAPER_OUT)/report/claims.json $(PAPER_OUT)/report/summary.json benchmarks/reference/$(PAPER)-paper/ && \
	  echo "reference written: benchmarks/reference/$(PAPER)-paper (reproduce exit $$code)"' > $(PAPER_OUT).log 2>&1 &

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(DEFAULT_VENV) $(OUT) .pytest_cache site
