"""Issue 8: the engine's speed-ups must not change what is computed, and the benchmark helpers work."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer  # noqa: F401  (float64)
from twolayer import nets
from twolayer.activations import make_activation

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _data(n, d, h, seed=0):
    rng = np.random.default_rng(seed)
    X = jnp.asarray(rng.standard_normal((n, d)) / np.sqrt(d))
    y = jnp.asarray(rng.choice([-1.0, 1.0], size=n))
    params = {"W": jnp.asarray(0.3 * rng.standard_normal((h, d))), "v": jnp.asarray(0.3 * rng.standard_normal(h))}
    return X, y, params


def _loss(net, act):
    return lambda p, X, y: jnp.mean(jnp.exp(-y * nets.NETS.get(net)(p, X, act)))


@pytest.mark.parametrize("net", ["two_layer", "mean_field"])
def test_fast_rows_dot_gradient_equals_autodiff(net):
    """Large data take the custom-VJP path; its gradient (also batched over seeds) equals plain autodiff."""
    act = make_activation("relu")
    X, y, p = _data(1024, 96, 7)  # X.size = 98,304 >= 2^16 and h = 7 < d = 96: the fast path
    assert X.size >= nets.ROWS_DOT_FAST_MIN_SIZE
    assert "custom_vjp" in str(jax.make_jaxpr(nets.rows_dot)(X, p["W"]))
    assert "custom_vjp" not in str(jax.make_jaxpr(nets.rows_dot)(X, jnp.ones((200, 96))))  # h > d: plain
    if net == "mean_field":
        p = {"W": p["W"]}
    plain = _loss(net, act)

    def reference(q, X, y):  # the same loss with X @ W' written out (no custom VJP)
        W = q["W"]
        if net == "two_layer":
            return jnp.mean(jnp.exp(-y * (act(X @ W.T) @ q["v"])))
        norms = jnp.linalg.norm(W, axis=1)
        return jnp.mean(jnp.exp(-y * (act((X @ W.T) / norms) @ norms**2 / W.shape[0])))

    g_fast = jax.jit(jax.grad(plain))(p, X, y)
    g_ref = jax.jit(jax.grad(reference))(p, X, y)
    for k in p:
        np.testing.assert_allclose(g_fast[k], g_ref[k], rtol=1e-12, atol=1e-15)
    batched = jax.tree_util.tree_map(lambda a: jnp.stack([a, 2 * a]), p)
    gb = jax.jit(jax.vmap(jax.grad(plain), in_axes=(0, None, None)))(batched, X, y)
    g2 = jax.grad(reference)(jax.tree_util.tree_map(lambda a: 2 * a, p), X, y)
    for k in p:
        np.testing.assert_allclose(gb[k][0], g_ref[k], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(gb[k][1], g2[k], rtol=1e-12, atol=1e-15)
    # the input cotangent is right too (d/dX of the loss)
    gx = jax.grad(plain, argnums=1)(p, X, y)
    np.testing.assert_allclose(gx, jax.grad(reference, argnums=1)(p, X, y), rtol=1e-12, atol=1e-15)


def test_small_data_keep_the_plain_product_bit_for_bit():
    """Below the size threshold rows_dot is X @ W' itself: forward mode works and results are identical."""
    X, y, p = _data(20, 2, 50)
    assert X.size < nets.ROWS_DOT_FAST_MIN_SIZE
    np.testing.assert_array_equal(nets.rows_dot(X, p["W"]), X @ p["W"].T)
    act = make_activation("relu")
    f = lambda W: nets.NETS.get("two_layer")({"W": W, "v": p["v"]}, X, act)  # noqa: E731
    _, tangent = jax.jvp(f, (p["W"],), (jnp.ones_like(p["W"]),))  # raises on a custom_vjp
    assert tangent.shape == (20,)


def _load_bench(name):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_benchmark_results_keep_other_keys(tmp_path, monkeypatch):
    common = _load_bench("_common")
    target = tmp_path / "results.json"
    target.write_text(json.dumps({"step_speed": {"x": 1}}))
    monkeypatch.setattr(common, "RESULTS", target)
    stats = common.summary([3.0, 1.0, 2.0])
    assert stats["median_seconds"] == 2.0 and stats["best_seconds"] == 1.0
    common.write_result("seed_batching", {"ratio": 2.5}, started=0.0, load_start=[0.1, 0.2, 0.3], argv=["--quick"])
    out = json.loads(target.read_text())
    assert out["step_speed"] == {"x": 1}
    assert out["seed_batching"]["ratio"] == 2.5
    assert out["seed_batching"]["machine"]["load_average_start"] == [0.1, 0.2, 0.3]


def test_run_all_lists_every_benchmark_script():
    run_all = _load_bench("run_all")
    for script, _ in run_all.SUITE.values():
        assert (BENCH / script).is_file(), script


def test_seed_map_single_seed_matches_vmap_and_keeps_the_seed_axis():
    """One seed runs unbatched (faster on CPU) but returns the same values, shaped like vmap's."""
    from twolayer.train.loop import seed_map

    X, y, p = _data(20, 3, 4)
    loss = _loss("two_layer", make_activation("relu"))

    def fn(q, scale):
        return {"g": jax.grad(loss)(q, X, y)["W"] * scale, "l": loss(q, X, y)}

    for seeds in (1, 3):
        batch = jax.tree_util.tree_map(lambda a: jnp.stack([a * (1 + i) for i in range(seeds)]), p)
        got = jax.jit(seed_map(fn, (0, None)))(batch, 2.0)
        ref = jax.vmap(fn, in_axes=(0, None))(batch, 2.0)
        assert got["g"].shape == (seeds, 4, 3) and got["l"].shape == (seeds,)
        for k in ref:
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-13, atol=1e-15)


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
