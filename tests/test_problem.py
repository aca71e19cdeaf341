"""Problem and Context: leaving out input columns that are zero in every sample changes nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import twolayer  # noqa: F401  (float64)
from twolayer.activations import make_activation


BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("method,weight_decay", [("gd", 0.0), ("gd", 0.1), ("sgd", 0.0)])
def test_dropping_zero_input_columns_changes_nothing(tmp_path, method, weight_decay):
    """Training on the nonzero input columns only (``support_arrays``) gives the trajectory of the full
    product to rounding; the dropped columns of W keep their init (or decay by (1 - lr wd)^k)."""
    sim, state = _sim_with_zero_columns(tmp_path, method, weight_decay=weight_decay)
    ref_sim, ref = _sim_with_zero_columns(tmp_path, method, weight_decay=weight_decay, zero_fraction_rule=False)
    assert sim.ctx.arrays["support"].tolist() == [0, 2, 3, 5, 7] and sim.ctx.arrays["X_support"].shape == (40, 5)
    assert "support" not in ref_sim.ctx.arrays
    for k in ("W", "v"):
        np.testing.assert_allclose(state.params[k], ref.params[k], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(state.records["loss"], ref.records["loss"], rtol=1e-12)
    W0 = np.asarray(sim.initial_state().params["W"])
    decay = (1 - 0.05 * weight_decay) ** 60
    np.testing.assert_allclose(np.asarray(state.params["W"])[..., [1, 4, 6]], decay * W0[..., [1, 4, 6]], rtol=1e-12)
    assert not np.allclose(np.asarray(state.params["W"])[..., [0, 2]], W0[..., [0, 2]])


def test_zero_columns_are_kept_where_they_matter(tmp_path):
    """mean_field nets see ||w_j|| (all columns), the population objective has no X, and dense data have
    nothing to drop: no restriction in those cases."""
    from twolayer.nets import NETS
    from twolayer.problem import Problem, support_arrays

    sim, _ = _sim_with_zero_columns(tmp_path, model="mean_field")
    assert "support" not in sim.ctx.arrays
    X = np.ones((5, 16))
    X[:, 0] = 0.0  # 1 of 16 zero columns: below the 1/8 share that pays for the gather
    base = Problem(NETS.get("two_layer"), make_activation("relu"), sim.problem.loss, "mean")
    assert support_arrays(base, X) == {}
    X[:, 1] = 0.0  # 2 of 16: exactly 1/8
    assert support_arrays(base, X)["support"].tolist() == list(range(2, 16))
    assert support_arrays(Problem(NETS.get("two_layer"), make_activation("relu"), sim.problem.loss, "mean",
                                  objective="population"), X) == {}


def _sim_with_zero_columns(tmp_path, method="gd", model="two_layer", weight_decay=0.0, zero_fraction_rule=True):
    """A GD/SGD run on data whose columns 1, 4 and 6 (of 8) are zero in every sample."""
    from twolayer import problem
    from twolayer.config import load_config
    from twolayer.train import Simulation

    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 8))
    X[:, [1, 4, 6]] = 0.0
    np.savez(tmp_path / "zeros.npz", X=X, y=np.sign(X[:, 0] + 0.1))
    train = {"method": method, "lr": 0.05, "steps": 60, "weight_decay": weight_decay}
    if method == "sgd":
        train["batch_size"] = 16
    cfg = load_config({
        "name": "zero-columns", "seeds": 2, "data": {"kind": "file", "path": str(tmp_path / "zeros.npz")},
        "model": {"kind": model, "activation": "relu", "width": 6}, "init": {"kind": "gaussian", "scale": 0.5},
        "loss": {"kind": "logistic", "reduction": "mean"}, "train": train,
        "observe": {"schedule": "every", "every": 20, "metrics": ["loss"]}})
    saved = problem.ZERO_COLUMNS_MIN_FRACTION
    problem.ZERO_COLUMNS_MIN_FRACTION = saved if zero_fraction_rule else 2.0  # 2.0: never drop columns
    try:
        sim = Simulation(cfg)
    finally:
        problem.ZERO_COLUMNS_MIN_FRACTION = saved
    return sim, sim.run(sim.initial_state())
