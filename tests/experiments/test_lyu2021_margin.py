"""Lyu et al. (2021) margin module: data, SVM and Phase-I theory, the flow_log integrator, margin
observables (conformance on separable data), events, and every claim function on passing and
failing synthetic runs."""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer
from twolayer.activations import make_activation
from twolayer.config import ConfigError, load_config
from twolayer.data import build_dataset
from twolayer.losses import LOSSES, log_logistic
from twolayer.nets import NETS
from twolayer.observe import CONTEXT, OBSERVABLES, evaluate
from twolayer.problem import Problem, make_context
from twolayer.theory import margin as th

ALPHA = 0.2
ACT = {"name": "leaky_relu", "slope": ALPHA}
MINE = ["log_loss", "normalized_margin", "smoothed_margin", "margin_ratio", "kkt_residual", "nonlinearity",
        "boundary_linearity", "cos_mu", "cos_wstar", "group_mass", "balancedness", "mu_projection"]


def sym_data(d=2, n=20, seed=0):
    return build_dataset(load_config({"data": {"kind": "symmetric_separable", "d": d, "n": n, "seed": seed}}).data)


# -- data and linear theory -------------------------------------------------------------------------

def test_svm_hand_solvable():
    # y_i x_i = (2, 0) and (0, 2): min-norm point of the segment is (1, 1) -> gamma* = sqrt 2
    w, g = th.max_margin_linear(np.array([[2.0, 0.0], [0.0, -2.0]]), np.array([1.0, -1.0]))
    np.testing.assert_allclose(w, [1 / math.sqrt(2), 1 / math.sqrt(2)], atol=1e-12)
    assert g == pytest.approx(math.sqrt(2), abs=1e-12)
    # a dominated point does not move the solution: (1, +-0.5) -> w* = e1, gamma* = 1
    w, g = th.max_margin_linear(np.array([[1.0, 0.5], [1.0, -0.5], [3.0, 0.0]]), np.ones(3))
    np.testing.assert_allclose(w, [1.0, 0.0], atol=1e-12)
    assert g == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match="not linearly separable"):
        th.max_margin_linear(np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([1.0, -1.0]))


def test_svm_random_separable_is_optimal():
    data = sym_data(d=5, n=60)
    w, g = th.max_margin_linear(data.X, data.y)
    margins = data.y * (data.X @ w)
    assert np.min(margins) == pytest.approx(g, rel=1e-10)
    rng = np.random.default_rng(1)  # no random unit direction does better
    for v in rng.normal(size=(2000, 5)):
        assert np.min(data.y * (data.X @ (v / np.linalg.norm(v)))) <= g + 1e-12


def test_symmetric_data_and_augmentation():
    data = sym_data(d=3, n=30)
    assert th.is_symmetric(data.X, data.y)
    np.testing.assert_allclose(data.X[:15], -data.X[15:])
    assert np.all(data.y[:15] == 1) and np.all(data.y[15:] == -1)
    assert th.mu_dot_x_min(data.X, data.y) >= 1e-8
    aug = build_dataset(load_config({"data": {"kind": "separable_ball", "d": 3, "n": 12, "augment": "symmetric"}}).data)
    assert aug.n == 24 and th.is_symmetric(aug.X, aug.y)
    assert not th.is_symmetric(aug.X[:12], aug.y[:12])
    # unset augment stays out of the resolved config (existing run hashes unchanged)
    assert "augment" not in load_config({"data": {"kind": "two_points"}}).resolved()["data"]
    with pytest.raises(ConfigError, match="augment"):
        load_config({"data": {"kind": "two_points", "augment": "mirror"}})


def test_augment_warns_when_mu_dot_x_vanishes(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.array([[1.0, 0.0], [0.0, 1.0]]), y=np.array([1.0, 1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_dataset(load_config({"data": {"kind": "file", "path": str(path), "augment": "symmetric"}}).data)
    # mu = (2/3, 0) is orthogonal to x = (0, 1)
    np.savez(path, X=np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), y=np.array([1.0, -1.0, 1.0]))
    with pytest.warns(UserWarning, match="technical"):
        build_dataset(load_config({"data": {"kind": "file", "path": str(path), "augment": "symmetric"}}).data)


def test_G_is_linear_on_symmetric_data():
    data = sym_data(d=4, n=40)
    mu = th.mu(data.X, data.y)
    W = np.random.default_rng(0).normal(size=(50, 4))
    np.testing.assert_allclose(th.G(W, data.X, data.y, ALPHA), (1 + ALPHA) / 4 * W @ mu, atol=1e-12)
    mp, mm = th.mu_pm(data.X, data.y, ALPHA)
    np.testing.assert_allclose(mp, (1 + ALPHA) / 2 * mu, atol=1e-14)
    np.testing.assert_allclose(mm, (1 + ALPHA) / 2 * mu, atol=1e-14)
    # swapping labels swaps mu^+ and mu^- (up to the sign of y)
    mp2, mm2 = th.mu_pm(data.X[:20], -data.y[:20], ALPHA)
    mp1, mm1 = th.mu_pm(data.X[:20], data.y[:20], ALPHA)
    np.testing.assert_allclose(mp2, -mm1, atol=1e-14)
    np.testing.assert_allclose(mm2, -mp1, atol=1e-14)


def test_global_max_construction_and_kkt():
    data = sym_data(d=3, n=30)
    w, g = th.max_margin_linear(data.X, data.y)
    r = 0.7
    W, a = np.array([r * w, -r * w]), np.array([r, -r])
    assert th.normalized_margin(W, a, data.X, data.y, ALPHA) == pytest.approx((1 + ALPHA) * g / 4, rel=1e-12)
    res, lam, support = th.kkt_residual(W, a, data.X, data.y, ALPHA)
    assert res < 1e-8 and support.sum() >= 1 and np.all(lam >= 0)
    Wr = np.random.default_rng(3).normal(size=(2, 3))
    assert th.kkt_residual(Wr, np.array([1.0, -1.0]), data.X, data.y, ALPHA)[0] > 0.1


def test_hinted_dataset_prechecks():
    """The pre-checks of spec E6 on the experiment's hinted data (they look only at the data, so they are
    tests, not claims): mu^+ classifies every point, ||mu^+|| > ||mu^-|| (A.3), every support vector of
    {(x^+, y)} has y = +1 (A.5), w^+ = w*, gamma^+ = eps; and the three margins the claims compare."""
    from twolayer.papers.lyu2021.hinted import HINT_DATA

    data = build_dataset(load_config({"data": HINT_DATA}).data)
    w_b = np.asarray(data.info["base_w_star"])
    np.testing.assert_allclose(data.X[0], 1000.0 * w_b, atol=1e-9)
    np.testing.assert_allclose(data.X[1] + data.X[2], 2 * data.info["eps"] * w_b, atol=1e-12)
    c = th.hinted_prechecks(data.X, data.y, ALPHA)
    assert c["mu_plus_classifies_all"] and c["A3_mu_plus_larger"] and c["A5_support_vectors_positive"]
    assert c["mu_plus_norm"] > 4 * c["mu_minus_norm"]
    assert c["gamma_plus"] == pytest.approx(data.info["eps"], rel=1e-9)
    assert c["cos_wplus_wstar"] == pytest.approx(1.0, abs=1e-9)
    with pytest.warns(UserWarning, match="pre-check"):
        build_dataset(load_config({"data": {"kind": "hinted", "H": 1.0}}).data)
    fam, _ = th.linear_family_margin(data.X, data.y, ALPHA)
    cert, _ = th.certificate_margin(data.X, data.y, ALPHA, np.asarray(data.info["w_star"]), np.asarray(data.info["w_perp"]))
    assert c["gamma_plus"] / 2 <= fam * (1 + 1e-9) and cert > 2 * fam


def test_phase1_closed_form_is_exact_for_the_linearized_flow():
    data = sym_data(d=3, n=30)
    lam = th.growth_rate(data.X, data.y, ALPHA)
    assert lam == pytest.approx((1 + ALPHA) / 4 * np.linalg.norm(th.mu(data.X, data.y)))
    rng = np.random.default_rng(0)
    W0, a0 = rng.normal(size=(4, 3)), rng.normal(size=4)
    mbar = th.mu(data.X, data.y) / np.linalg.norm(th.mu(data.X, data.y))
    W, a = th.phase1_closed_form(W0, a0, 2.0, data.X, data.y, ALPHA)
    s0, s = W0 @ mbar, W @ mbar
    np.testing.assert_allclose(s + a, (s0 + a0) * np.exp(lam * 2.0), rtol=1e-12)
    np.testing.assert_allclose(s - a, (s0 - a0) * np.exp(-lam * 2.0), rtol=1e-12)
    np.testing.assert_allclose(W - np.outer(s, mbar), W0 - np.outer(s0, mbar), atol=1e-12)


# -- stable log-loss ----------------------------------------------------------------------------------

def test_log_logistic_stable_and_accurate():
    q = jnp.array([-50.0, -1.0, 0.0, 1.0, 29.0, 31.0, 100.0, 1e4])
    v = log_logistic(q)
    g = jax.vmap(jax.grad(log_logistic))(q)
    assert bool(jnp.all(jnp.isfinite(v))) and bool(jnp.all(jnp.isfinite(g)))
    ref = np.log(np.log1p(np.exp(-np.array([-50.0, -1.0, 0.0, 1.0, 29.0, 31.0]))))
    np.testing.assert_allclose(np.asarray(v[:6]), ref, rtol=1e-12)
    assert float(v[-1]) == pytest.approx(-1e4, rel=1e-15)
    assert float(g[-1]) == pytest.approx(-1.0, abs=1e-12)


# -- observables: conformance on separable data and invariances ----------------------------------

def _ctx(data, dtype, metrics, act=ACT):
    cfg = load_config({"data": {"kind": "symmetric_separable", "d": data.d, "n": data.n},
                       "model": {"activation": act}})
    problem = Problem(NETS.get("two_layer"), make_activation(act), LOSSES.get("logistic"), "mean")
    arrays = {"X": data.X, "y": data.y}
    for name in metrics:
        for need in OBSERVABLES.get(name).needs:
            arrays[need] = CONTEXT.get(need)(data, cfg)
    return make_context(problem, arrays, dtype)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("d", [2, 3])
def test_margin_observables_conformance(dtype, d):
    data = sym_data(d=d, n=12)
    ctx = _ctx(data, dtype, MINE)
    key = jax.random.PRNGKey(0)
    params = {"W": jax.random.normal(key, (3, 5, d), dtype=dtype),
              "v": jax.random.normal(jax.random.fold_in(key, 1), (3, 5), dtype=dtype)}
    out = jax.jit(jax.vmap(lambda p, c: evaluate(MINE, p, c), in_axes=(0, None)))(params, ctx)
    for name in MINE:
        obs = OBSERVABLES.get(name)
        assert name in out, name  # the observable's own name is one of its outputs
        single = evaluate([name], jax.tree_util.tree_map(lambda x: x[1], params), ctx)
        for k, value in single.items():
            batch = out[k]
            assert batch.shape[0] == 3
            if obs.per_neuron:
                assert batch.shape[1:] == (5,), (k, batch.shape)
            assert batch.dtype == dtype, k
            assert bool(jnp.all(jnp.isfinite(batch))), k
            np.testing.assert_allclose(np.asarray(batch[1]), np.asarray(value),
                                       rtol=2e-3 if dtype == jnp.float32 else 1e-9, atol=1e-6)
    assert ("boundary_crossings" in out) == (d == 2)


def test_normalized_margin_scale_invariant_and_matches_numpy():
    data = sym_data(d=3, n=30)
    ctx = _ctx(data, jnp.float64, ["normalized_margin", "margin_ratio", "nonlinearity", "cos_wstar"])
    rng = np.random.default_rng(0)
    W, a = rng.normal(size=(6, 3)), rng.normal(size=6)
    base = evaluate(["normalized_margin", "margin_ratio", "nonlinearity", "cos_wstar"], {"W": W, "v": a}, ctx)
    assert float(base["normalized_margin"]) == pytest.approx(th.normalized_margin(W, a, data.X, data.y, ALPHA), rel=1e-12)
    for c in (1e-3, 7.0, 1e5):
        scaled = evaluate(["normalized_margin", "margin_ratio", "nonlinearity", "cos_wstar"], {"W": c * W, "v": c * a}, ctx)
        for k in base:
            np.testing.assert_allclose(np.asarray(scaled[k]), np.asarray(base[k]), rtol=1e-9)


def test_kkt_observable_matches_scipy_and_linear_diagnostics():
    data = sym_data(d=3, n=30)
    w, g = th.max_margin_linear(data.X, data.y)
    names = ["kkt_residual", "nonlinearity", "boundary_linearity", "group_mass", "margin_ratio", "smoothed_margin"]
    ctx = _ctx(data, jnp.float64, names)
    W, a = np.array([0.8 * w, 0.6 * w, -w]), np.array([0.8, 0.6, -1.0])  # A+ = A- = 1/4 of ||theta||^2
    out = evaluate(names, {"W": W, "v": a}, ctx)
    assert float(out["kkt_residual"]) < 1e-6
    assert float(out["nonlinearity"]) < 1e-12 and float(out["boundary_linearity"]) == 0.0
    assert float(out["group_mass_pos"]) == pytest.approx(0.25) and float(out["group_mass_neg"]) == pytest.approx(0.25)
    assert float(out["margin_ratio"]) == pytest.approx(1.0, rel=1e-10)
    assert float(out["smoothed_margin"]) < th.normalized_margin(W, a, data.X, data.y, ALPHA)
    one = evaluate(["nonlinearity"], {"W": w[None], "v": np.array([1.0])}, ctx)  # one neuron: (1-a)/(1+a)
    assert float(one["nonlinearity"]) == pytest.approx((1 - ALPHA) / (1 + ALPHA), rel=0.05)
    rng = np.random.default_rng(5)
    for _ in range(3):
        Wr, ar = W + 0.3 * rng.normal(size=W.shape), a + 0.1 * rng.normal(size=3)
        ref = th.kkt_residual(Wr, ar, data.X, data.y, ALPHA)[0]
        got = float(evaluate(["kkt_residual"], {"W": Wr, "v": ar}, ctx)["kkt_residual"])
        assert got == pytest.approx(ref, abs=2e-3)


# -- flow_log: against GD, the Phase-I closed form, conservation, end to end ----------------------

FLOW_METRICS = ["log_loss", "margin_ratio", "balancedness", "w_norm", "v", "cos_mu", "mu_projection"]


def flow_cfg(scale, tau, init="balanced", **extra):
    return {"name": "flowtest", "seed": 0, "data": {"kind": "symmetric_separable", "d": 2, "n": 20},
            "model": {"kind": "two_layer", "activation": ACT, "width": 4}, "init": {"kind": init, "scale": scale},
            "loss": {"kind": "logistic", "reduction": "mean"},
            "train": {"method": "flow_log", "time": tau, "rtol": 1e-8, "atol": 1e-300},
            "observe": {"schedule": "log", "points": 30, "metrics": FLOW_METRICS}, **extra}


def test_flow_log_config_contract():
    cfg = load_config(flow_cfg(1e-3, 10.0))
    assert cfg.train.stop_log_loss == -1e4 and cfg.train.stop_norm_sq == 1e12
    with pytest.raises(ConfigError, match="lr"):
        load_config(flow_cfg(1e-3, 10.0) | {"train": {"method": "flow_log", "time": 1.0, "lr": 0.1}})
    with pytest.raises(ConfigError, match="weight_decay"):
        load_config(flow_cfg(1e-3, 10.0) | {"train": {"method": "flow_log", "time": 1.0, "weight_decay": 0.1}})


def test_flow_log_matches_gd_and_conserves_balancedness(out):
    T = 4.0
    flow = twolayer.run(flow_cfg(0.5, math.log1p(T), init="gaussian"), out=out)
    gd_cfg = flow_cfg(0.5, 1.0, init="gaussian")
    gd_cfg["train"] = {"method": "gd", "lr": 1e-3, "steps": int(T / 1e-3)}
    gd = twolayer.run(gd_cfg, out=out)
    pf, pg = flow.final_params, gd.final_params
    theta_f = np.concatenate([pf["W"].ravel(), pf["v"]])
    theta_g = np.concatenate([pg["W"].ravel(), pg["v"]])
    theta_0 = np.concatenate([np.asarray(x).ravel() for x in _init_params(flow).values()])
    rel = np.linalg.norm(theta_f - theta_g) / np.linalg.norm(theta_f - theta_0)
    assert rel < 5e-3  # GD is O(lr) away from the flow
    tr = flow.trajectory
    imbalance = tr["w_norm"] ** 2 - tr["v"] ** 2  # conserved by gradient flow for ANY init
    assert np.max(np.abs(imbalance - imbalance[:1])) < 1e-7 * np.max(tr["w_norm"] ** 2)
    assert np.max(np.abs(tr["v"][-1] - tr["v"][0])) > 0.1  # it did move


def _init_params(run):
    from twolayer.train import Simulation

    p = Simulation(load_config(run.config)).initial_state().params
    return {k: np.asarray(v)[0] for k, v in p.items()}


def test_flow_log_follows_phase1_closed_form(out):
    T = 30.0
    run = twolayer.run(flow_cfg(1e-6, math.log1p(T), init="gaussian"), out=out)
    data = build_dataset(load_config(run.config).data)
    p0 = _init_params(run)
    W, a = th.phase1_closed_form(p0["W"], p0["v"], T, data.X, data.y, ALPHA)
    pf = run.final_params
    assert np.linalg.norm(pf["W"]) < 1e-3  # still near the origin
    err = np.linalg.norm(np.concatenate([pf["W"].ravel() - W.ravel(), pf["v"] - a])) / np.linalg.norm(np.concatenate([W.ravel(), a]))
    assert err < 1e-4


def test_flow_log_end_to_end_late_phase(out):
    run = twolayer.run(flow_cfg(1e-4, 300.0, seeds=[2, 3]) | {"seed": None}, out=out)
    assert run.status == "completed"
    tr = run.trajectory
    assert np.all(tr["log_loss"][:, -1] < -200)  # far below where L underflows... still finite
    assert np.all(np.isfinite(tr["margin_ratio"]))
    events = run.summary["events"]
    for name in ("fit_time", "late_phase", "phase1_end"):
        assert name in events
    assert all(f <= l for f, l in zip(events["fit_time"], events["late_phase"]))
    p0 = np.asarray(_batched_init(run)["v"])
    mixed = np.any(p0 > 0, axis=1) & np.any(p0 < 0, axis=1)
    assert np.all((tr["margin_ratio"][:, -1] > 0.99) == mixed)


def _batched_init(run):
    from twolayer.train import Simulation

    return Simulation(load_config(run.config)).initial_state().params


def test_flow_log_stop_rule_freezes_the_seed(out):
    cfg = flow_cfg(1e-4, 300.0)
    cfg["train"]["stop_log_loss"] = -20.0
    run = twolayer.run(cfg, out=out)
    ll = run.trajectory["log_loss"]
    assert run.status == "completed"
    assert -25.0 < ll[-1] <= -20.0 and ll[-1] == ll[-2]


def test_group_amplitude_ratio():
    """rho = the weaker group's largest Phase-I amplitude over the stronger group's (1 for one group)."""
    data = sym_data(d=3, n=30)
    m = th.mu(data.X, data.y)
    mbar = m / np.linalg.norm(m)
    perp = np.linalg.svd(np.eye(3) - np.outer(mbar, mbar))[0][:, 0]
    W = np.array([0.5 * mbar + perp, -0.01 * mbar, 0.2 * mbar])
    a = np.array([0.3, 0.0, -0.1])  # amplitudes |s + a|: 0.8 (+), 0.01 (-), 0.1 (+)
    assert th.group_amplitude_ratio(W, a, data.X, data.y) == pytest.approx(0.01 / 0.8)
    assert th.group_amplitude_ratio(W[[0, 2]], a[[0, 2]], data.X, data.y) == 1.0
    sign, c = th.phase1_groups(W, a, data.X, data.y)
    np.testing.assert_allclose(c, [0.8, 0.01, 0.1], atol=1e-12)
    np.testing.assert_array_equal(sign, [1.0, -1.0, 1.0])
