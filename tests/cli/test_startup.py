"""Commands that only read the store stay light: ``twolayer show`` and ``twolayer list --runs`` import no JAX
(issue 30, section 5: show and list under a second warm; importing JAX alone takes about that long)."""

from __future__ import annotations

import json
import subprocess
import sys

import twolayer
from conftest import base_config

PROBE = ("import sys; from twolayer.cli import main; code = main({args!r}); "
         "print(code, 'jax' in sys.modules, 'twolayer.api' in sys.modules)")


def _run(args) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1].split()


def test_show_and_list_import_no_jax(tmp_path):
    run = twolayer.run(base_config(), out=tmp_path)
    assert json.loads((run.path / "summary.json").read_text())["status"] == "completed"
    assert _run(["show", run.path.name, "--out", str(tmp_path)]) == ["0", "False", "False"]
    assert _run(["list", "--runs", "--out", str(tmp_path)]) == ["0", "False", "False"]


def test_plot_without_a_theory_imports_no_jax(tmp_path):
    """``twolayer plot`` reads a sweep table and draws it: no JAX unless a theory's premises are checked (the
    config layer, which validates activations, is then imported)."""
    from twolayer.sweep import run_sweep

    run_sweep({"name": "s", "base": base_config(), "grid": {"init.scale": [0.1, 0.3]}}, out=tmp_path)
    args = ["plot", str(tmp_path / "s"), "--x", "init.scale", "--metric", "loss"]
    assert _run(args)[:2] == ["0", "False"]
