"""Shared fixtures: small configs and data files for engine tests, and a headless Chromium (``browser``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import jax
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)


def base_config(**sections) -> dict:
    """A small, fast two-layer config on the two_points data; sections override whole keys."""
    cfg = {
        "name": "t",
        "data": {"kind": "two_points", "angle": 1.2, "labels": [1, -1]},
        "model": {"kind": "two_layer", "activation": "relu", "width": 8},
        "init": {"kind": "gaussian", "scale": 0.3},
        "loss": {"kind": "logistic", "reduction": "mean"},
        "train": {"method": "gd", "lr": 0.05, "steps": 100},
        "observe": {"schedule": "log", "points": 10, "metrics": ["loss"]},
    }
    cfg.update(sections)
    return cfg


@pytest.fixture
def out(tmp_path):
    return tmp_path / "out"


@pytest.fixture(scope="session")
def shared_store(tmp_path_factory):
    """One run store for the session, for tests that run the same registered configs: a run one test made is a
    verified cache hit for the next (the quick runs of min2024's claim tests, the falsifier runs of the conformance
    test and the reproductions that draw reports from them). A run directory is the config's name and hash, so a
    changed config never meets another's run; a test that writes a report there reads it before the next one."""
    return tmp_path_factory.mktemp("shared-runs")


@pytest.fixture
def random_data_file(tmp_path):
    """An npz with n=12 points in d=3 (labels +-1) and the path to it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = np.where(rng.random(12) < 0.5, -1.0, 1.0)
    path = tmp_path / "data.npz"
    np.savez(path, X=X, y=y)
    return path, X, y


@pytest.fixture
def init_file(tmp_path):
    """An npz with W [6, 3] and v [6] (generic, no zero pre-activations)."""
    rng = np.random.default_rng(1)
    W, v = 0.5 * rng.normal(size=(6, 3)), 0.5 * rng.normal(size=6)
    path = tmp_path / "init.npz"
    np.savez(path, W=W, v=v)
    return path, W, v


# -- headless Chromium for the browser tests (skipped when Chromium, chromedriver or selenium is missing) --

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
CHROMEDRIVER = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,1600"]


@pytest.fixture
def browser(tmp_path):
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("chromium and chromedriver are not installed")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


# -- expensive experiment configs computed once per session ---------------------------------------------------------
# Some experiments build their configs with real numerics (lyu2021's KKT picks: scipy least squares, and initial
# parameters sampled through JAX), 10-45 s a scale. The registry checks, the reference check, `report`'s store scan
# and the reproduce tests each ask for the same configs again. Configs are functions of (experiment, scale, the
# environment, the working folder); a result that took at least MEMO_SECONDS to make is kept under that key and
# handed out as a deep copy. Cheaper ones are recomputed on every call, so the tests that make the same configs
# twice still check that they come out the same; the expensive ones are checked against the committed paper-scale
# references (tests/test_references.py, computed in another process).

MEMO_SECONDS = 0.5


@pytest.fixture(autouse=True, scope="session")
def _memoised_expensive_run_configs():
    import copy
    import os
    import time

    from twolayer.claims.registry import Experiment

    plain, kept = Experiment.run_configs, {}

    def run_configs(self, scale):
        key = (self.configs, self.paper, self.name, scale, frozenset(os.environ.items()), os.getcwd())
        if key in kept:
            return copy.deepcopy(kept[key])
        start = time.perf_counter()
        configs = plain(self, scale)
        if time.perf_counter() - start >= MEMO_SECONDS:
            kept[key] = copy.deepcopy(configs)
        return configs

    Experiment.run_configs = run_configs
    yield
    Experiment.run_configs = plain
