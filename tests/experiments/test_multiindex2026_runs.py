"""Multi-index observables, events and end-to-end runs (the identities the engine must satisfy)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer
from twolayer.activations import make_activation
from twolayer.config import ConfigError
from twolayer.claims import get
from twolayer.observe import evaluate
from twolayer.observe import multi_index as obs_mi
from twolayer.train.loop import Simulation

MY_METRICS = sorted({*obs_mi.GEOMETRY, "loss_population", "loss_train", "loss_test", "loss_order", "loss_order_4plus",
                     "energies", "alignment", "subspace_fraction", "symmetrized_variance", "symmetrized_bias",
                     "a_hat", "b_hat"})


def config(**over):
    cfg = {"name": "mi", "seeds": 2,
           "data": {"kind": "multi_index", "d": 10, "r": 3, "n": 300, "n_test": 300},
           "model": {"kind": "mean_field", "activation": "abs", "width": 12},
           "init": {"kind": "standard"}, "loss": {"kind": "square"}, "objective": "population",
           "train": {"method": "gd", "lr": 0.02, "steps": 500},
           "observe": {"schedule": "log", "points": 25, "metrics": MY_METRICS}}
    cfg.update(over)
    return cfg


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_observables_conformance_on_multi_index_data(precision):
    sim = Simulation(twolayer.load_config(config(precision=precision)))
    params = sim.initial_state().params
    batched = jax.jit(jax.vmap(lambda p, c: evaluate(MY_METRICS, p, c), in_axes=(0, None)))(params, sim.ctx)
    dtype = jnp.float32 if precision == "float32" else jnp.float64
    one = jax.jit(lambda p, c: evaluate(MY_METRICS, p, c))
    for name in MY_METRICS:
        assert name in batched
    for key, value in batched.items():
        assert value.shape[0] == 2 and value.dtype == dtype and bool(jnp.all(jnp.isfinite(value))), key
        single = one(jax.tree_util.tree_map(lambda x: x[1], params), sim.ctx)[key]
        np.testing.assert_allclose(np.asarray(value[1]), np.asarray(single), rtol=1e-4 if precision == "float32"
                                   else 1e-10, atol=1e-6 if precision == "float32" else 1e-12)
    assert batched["alignment"].shape == (2, 12) and batched["loss_order"].shape == (2, obs_mi.ORDER_K + 1)


def test_end_to_end_population_run_identities_and_events(tmp_path):
    run = twolayer.run(config(), out=tmp_path)
    assert run.status == "completed"
    tr = run.trajectory
    np.testing.assert_allclose(tr["mass_subspace"] + tr["mass_irrelevant"], tr["mass_total"], rtol=1e-12)
    np.testing.assert_allclose(tr["mass_aligned"] + tr["mass_dense"], tr["mass_total"], rtol=1e-12)
    np.testing.assert_allclose(tr["a_hat"].sum(-1), tr["mass_aligned"], rtol=1e-12)  # same 0.9 threshold
    np.testing.assert_allclose(tr["symmetrized_bias"] + tr["symmetrized_variance"], tr["loss_population"], rtol=1e-12)
    assert np.all(tr["symmetrized_variance"] + 4 * tr["symmetrized_variance_se"] >= 0)
    # the Hermite orders sum to at most the loss; the exact >=4 part is the rest (L_1 = L_3 = 0 for |x|)
    L = tr["loss_order"]
    assert np.all(L[..., 1::2] < 1e-12)
    np.testing.assert_allclose(L[..., 0] + L[..., 2] + tr["loss_order_4plus"], tr["loss_population"], rtol=1e-12)
    assert np.all(L[..., 4:].sum(-1) <= tr["loss_order_4plus"] + 1e-12)
    assert tr["loss_population"][:, -1].max() < 0.05 * tr["loss_population"][:, 0].min()
    assert np.all(tr["directions_found"] <= 3)
    ev = run.summary["events"]
    for key in ("tau_order0", "tau_order2", "t_irrelevant_below_10pct"):
        assert len(ev[key]) == 2 and all(v is not None for v in ev[key]), key
    assert all(a < b for a, b in zip(ev["tau_order0"], ev["tau_order2"]))
    assert np.all(np.abs(tr["loss_test"][:, 0] - tr["loss_population"][:, 0]) < 0.3 * tr["loss_population"][:, 0])


def test_empirical_objective_trains_on_the_fixed_sample(tmp_path):
    run = twolayer.run(config(objective="empirical", seeds=1), out=tmp_path)
    tr = run.trajectory
    assert tr["loss_train"][0, -1] < 0.2 * tr["loss_train"][0, 0]
    assert tr["loss_train"][0, -1] <= tr["loss_population"][0, -1]  # training loss below the population loss


def test_rotation_invariance_of_population_loss():
    base = twolayer.load_config(config(seeds=None, seed=0))
    rot = twolayer.load_config(config(seeds=None, seed=0, data={**config()["data"], "directions": "random"}))
    s0, s1 = Simulation(base), Simulation(rot)
    W = s0.initial_state().params["W"][0]
    B = s1.dataset.context["target_basis"]
    names = ["loss_population", "loss_order", "mass_subspace", "symmetrized_variance"]
    ev = jax.jit(lambda p, c: evaluate(names, p, c))
    a = ev({"W": W}, s0.ctx)
    b = ev({"W": W @ jnp.asarray(B)}, s1.ctx)  # w'_i = B' w_i: same coordinates in the rotated basis
    for k in ("loss_population", "loss_order", "mass_subspace", "symmetrized_variance"):
        np.testing.assert_allclose(np.asarray(a[k]), np.asarray(b[k]), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("over", "field"), [
    ({"model": {"kind": "mean_field", "activation": "sym_gelu", "width": 5}}, "activation"),
    ({"loss": {"kind": "logistic"}}, "square"),
])
def test_population_setups_that_are_rejected(over, field, tmp_path):
    with pytest.raises(Exception, match=field):
        Simulation(twolayer.load_config(config(**over)))


def test_data_validation():
    with pytest.raises(ConfigError, match="data.r: is 4, more than d = 3"):
        twolayer.load_config(config(data={"kind": "multi_index", "d": 3, "r": 4}))


def test_bias_plus_variance_is_the_loss_and_the_variance_is_nonnegative(tmp_path):
    """Eq. (5) holds by construction (Lemma A.1): L(f) = L(f~) + 1/2 ||f - f~||^2 exactly, and the variance is a
    squared norm; the hybrid estimator's Monte Carlo residual keeps it >= 0 within 4 SE (an engine identity, not
    a claim about training)."""
    cfg = config(observe={"schedule": "log", "points": 12,
                          "metrics": ["loss_population", "symmetrized_variance", "symmetrized_bias"]})
    tr = twolayer.run(cfg, out=tmp_path).trajectory
    np.testing.assert_allclose(tr["symmetrized_bias"] + tr["symmetrized_variance"], tr["loss_population"], rtol=1e-12)
    assert np.all(tr["symmetrized_variance"] + 4 * tr["symmetrized_variance_se"] >= 0)
    assert np.all(tr["symmetrized_variance_order"][..., 1:] >= -1e-14)  # exact parts: ||T_k||^2 - ||T~_k||^2 >= 0


def test_transition_times_respect_the_order_of_components():
    t = np.arange(5.0)
    L = np.ones((5, 9))
    E = np.ones((5, 9))
    L[:, 2] = [1, 0.05, 0.05, 0.05, 0.05]  # order 2 dips before order 0 is learned: tau_2 must wait for tau_0
    L[:, 0] = [1, 1, 1, 0.05, 0.05]
    out = obs_mi.hermite_transition_times(t, L, E, np.array([1, 1, 1, 1, 0.01]), np.ones(5))
    assert out == {"tau_order0": 3.0, "tau_order2": 3.0, "tau_order4plus": 4.0}
    batched = {"t": t, "loss_order": L[None], "energies": E[None], "loss_order_4plus": np.array([[1, 1, 1, 1, 0.01]]),
               "energy_4plus": np.ones((1, 5))}
    assert obs_mi.transition_times(batched) == [out]


def test_cover_and_first_times():
    t = np.arange(4.0)
    tr = {"t": t, "direction_alignment_min": np.array([[0.1, 0.5, 0.95, 0.99], [0.1, 0.2, 0.3, 0.4]])}
    assert obs_mi.cover_times(tr, 0.9)[0] == 2.0 and np.isnan(obs_mi.cover_times(tr, 0.9)[1])


def test_coupling_errors():
    Ws = np.ones((1, 2, 3, 2))
    Wa = Ws.copy()
    Wa[0, 1, 0] += [3.0, 4.0]  # one particle off by 5 at t = 1
    delta, dmax = obs_mi.coupling_errors(Wa, Ws)
    np.testing.assert_allclose(delta[0], [0.0, np.sqrt(25 / 3)])
    np.testing.assert_allclose(dmax[0], [0.0, 5 / np.sqrt(2)])


def test_settle_time_is_twice_the_logistic_time_to_99_percent():
    from twolayer.theory import multi_index as th

    h = th.HermiteSums.of(make_activation("abs"))
    assert th.settle_time([0.99, 0.9], 20, 0.0, h) == pytest.approx(2 * th.stage11_time(0.99, 0.9, 20, 0.0, h))
    assert th.stage11_time(0.99, 0.9935, 20, 0.0, h) == pytest.approx(0.149, abs=1e-3)  # spec §4.2 reference


def test_gd_paper_switches_weight_decay_off(tmp_path):
    from twolayer.theory import multi_index as th

    finals = {}
    for method in ("gd", "gd_paper"):
        cfg = config(seeds=1, train={"method": method, "lr": 0.02, "steps": 8000, "weight_decay": 0.15},
                     observe={"schedule": "log", "points": 10, "metrics": ["loss_population"]})
        finals[method] = float(twolayer.run(cfg, out=tmp_path).trajectory["loss_population"][0, -1])
    plateau = th.plateau_loss(3, 0.15, th.HermiteSums.of(make_activation("abs")))
    assert finals["gd"] == pytest.approx(plateau, rel=0.05)
    assert finals["gd_paper"] < 0.1 * plateau


@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_every_experiment_config_validates(scale):
    from twolayer.claims import experiments

    exps = [e for e in experiments() if e.paper == "multiindex2026"]
    assert {e.name for e in exps} >= {"figure1", "figure1-empirical", "theorem31-table", "figure2", "overlays",
                                      "activations", "finite-size", "gd-stability", "schedule", "coupling"}
    for exp in exps:
        for key, cfg in exp.run_configs(scale).items():
            twolayer.load_config(cfg)
    if scale == "paper":
        emp = get("multiindex2026/figure1-empirical").run_configs("paper")["empirical"]
        assert emp["data"]["n"] == 50_000 and emp["objective"] == "empirical" and emp["precision"] == "float32"
        assert (emp["data"]["d"], emp["data"]["r"], emp["model"]["width"]) == (100, 20, 250)
        pop = get("multiindex2026/figure1").run_configs("paper")["population"]
        assert pop["data"]["d"] == 100 and pop["model"]["width"] == 250


def test_gradient_flow_on_the_population_objective(tmp_path):
    cfg = config(seeds=1, train={"method": "flow", "time": 3.0, "rtol": 1e-6, "atol": 1e-8},
                 observe={"schedule": "log", "points": 8, "metrics": ["loss_population", "mass_total"]})
    run = twolayer.run(cfg, out=tmp_path)
    tr = run.trajectory
    assert run.status == "completed"
    assert np.all(np.diff(tr["loss_population"][0]) <= 1e-9)  # the flow decreases the loss
    assert tr["mass_total"][0, -1] == pytest.approx(3.0, rel=0.05)  # alpha -> alpha_eq = r
