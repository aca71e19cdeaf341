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
