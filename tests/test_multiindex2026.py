"""Multi-index observables, events, end-to-end runs and the paper's claim functions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer
from twolayer.config import ConfigError
from twolayer.experiments import get
from twolayer.experiments import multiindex2026 as mi
from twolayer.experiments._registry import Results
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
    with pytest.raises(ConfigError, match="exceeds"):
        twolayer.load_config(config(data={"kind": "multi_index", "d": 3, "r": 4}))


# -- claim functions on synthetic data ------------------------------------------------------------

def _taus(t0, t2, t4):
    return {"tau_order0": t0, "tau_order2": t2, "tau_order4plus": t4}


def test_hermite_order_check():
    assert mi.hermite_order_check([_taus(0.1, 3.0, 36.0), _taus(0.1, 2.9, 35.0)]).passed
    assert not mi.hermite_order_check([_taus(0.1, 3.0, 36.0), _taus(0.1, 0.5, 35.0)]).passed  # tau_2 < 10 tau_0
    assert not mi.hermite_order_check([_taus(0.1, 3.0, 10.0)]).passed  # tau_4 < 5 tau_2
    assert not mi.hermite_order_check([_taus(0.1, 3.0, None)]).passed  # never learned


def test_order4_waits_check():
    t = np.linspace(0, 10, 11)
    E = np.ones((1, 11, 9))
    L = np.ones((1, 11, 9))
    L[0, 5:, 2] = 0.05  # order 2 learned at t = 5
    E4 = np.ones((1, 11))
    assert mi.order4_waits_check(t, L, E, np.full((1, 11), 0.95), E4).passed
    L4 = np.full((1, 11), 0.95)
    L4[0, 5] = 0.5
    assert not mi.order4_waits_check(t, L, E, L4, E4).passed


def _mass_traj(irr_end=0.01, sub_frac=0.95, found=10, aligned=9.0, bump=False):
    t = np.linspace(0, 100, 201)
    total = np.full((2, 201), 10.0)
    irr = 8.0 * np.exp(-t / 2.0) + irr_end
    if bump:
        irr[150] += 0.5
    return {"t": t, "mass_total": total, "mass_irrelevant": np.stack([irr, irr]),
            "subspace_fraction_min": np.full((2, 201), sub_frac), "directions_found": np.full((2, 201), found),
            "mass_aligned": np.full((2, 201), aligned)}


def test_irrelevant_and_found_checks():
    assert mi.irrelevant_check(_mass_traj(), 10).passed
    assert not mi.irrelevant_check(_mass_traj(bump=True), 10).passed
    assert not mi.irrelevant_check(_mass_traj(sub_frac=0.7), 10).passed
    assert mi.found_check(_mass_traj(), 10).passed
    assert not mi.found_check(_mass_traj(found=9), 10).passed
    assert not mi.found_check(_mass_traj(aligned=5.0), 10).passed


def test_figure2_claims_pass_on_the_ode():
    exp = get("multiindex2026/figure2")
    res = Results(exp, "quick", {})
    for claim in exp.claims:
        check = claim.fn(res)
        assert check.passed, (claim.id, check)


def test_transition_times_respect_the_order_of_components():
    t = np.arange(5.0)
    L = np.ones((5, 9))
    E = np.ones((5, 9))
    L[:, 2] = [1, 0.05, 0.05, 0.05, 0.05]  # order 2 dips before order 0 is learned: tau_2 must wait for tau_0
    L[:, 0] = [1, 1, 1, 0.05, 0.05]
    out = obs_mi.hermite_transition_times(t, L, E, np.array([1, 1, 1, 1, 0.01]), np.ones(5))
    assert out == {"tau_order0": 3.0, "tau_order2": 3.0, "tau_order4plus": 4.0}


def test_gd_paper_switches_weight_decay_off(tmp_path):
    from twolayer.activations import make_activation
    from twolayer.theory import multi_index as th

    finals = {}
    for method in ("gd", "gd_paper"):
        cfg = config(seeds=1, train={"method": method, "lr": 0.02, "steps": 8000, "weight_decay": 0.15},
                     observe={"schedule": "log", "points": 10, "metrics": ["loss_population"]})
        finals[method] = float(twolayer.run(cfg, out=tmp_path).trajectory["loss_population"][0, -1])
    plateau = th.plateau_loss(3, 0.15, th.HermiteSums.of(make_activation("abs")))
    assert finals["gd"] == pytest.approx(plateau, rel=0.05)
    assert finals["gd_paper"] < 0.1 * plateau


def test_coupling_errors_on_synthetic_runs():
    class FakeRun:
        def __init__(self, W):
            self.trajectory = {"t": np.arange(W.shape[1], dtype=float), "neuron_weights": W}

    Ws = np.ones((1, 2, 3, 2))
    Wa = Ws.copy()
    Wa[0, 1, 0] += [3.0, 4.0]  # one particle off by 5 at t = 1
    t, delta, dmax = mi.coupling_errors(FakeRun(Wa), FakeRun(Ws))
    np.testing.assert_allclose(delta[0], [0.0, np.sqrt(25 / 3)])
    np.testing.assert_allclose(dmax[0], [0.0, 5 / np.sqrt(2)])


@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_every_experiment_config_validates(scale):
    from twolayer.experiments import experiments

    exps = [e for e in experiments() if e.paper == "multiindex2026"]
    assert {e.name for e in exps} >= {"figure1", "figure2", "overlays", "activations", "finite-size", "gd-stability",
                                      "schedule", "coupling"}
    for exp in exps:
        for key, cfg in exp.run_configs(scale).items():
            twolayer.load_config(cfg)
    if scale == "paper":
        fig1 = get("multiindex2026/figure1").run_configs("paper")
        assert fig1["empirical"]["data"]["n"] == 50_000 and fig1["empirical"]["objective"] == "empirical"
        assert fig1["population"]["data"]["d"] == 100 and fig1["population"]["model"]["width"] == 250


def test_gradient_flow_on_the_population_objective(tmp_path):
    cfg = config(seeds=1, train={"method": "flow", "time": 3.0, "rtol": 1e-6, "atol": 1e-8},
                 observe={"schedule": "log", "points": 8, "metrics": ["loss_population", "mass_total"]})
    run = twolayer.run(cfg, out=tmp_path)
    tr = run.trajectory
    assert run.status == "completed"
    assert np.all(np.diff(tr["loss_population"][0]) <= 1e-9)  # the flow decreases the loss
    assert tr["mass_total"][0, -1] == pytest.approx(3.0, rel=0.05)  # alpha -> alpha_eq = r


class _Run:
    def __init__(self, trajectory, config=None):
        self.trajectory, self.config = trajectory, config or {}


def test_ab_overlay_errors_on_synthetic_runs():
    """The Stage 2.2 overlay starts at T_21 (all directions found) and measures |sim - ODE| of the means."""
    from twolayer.activations import make_activation
    from twolayer.theory import multi_index as th

    r, lam = 4, 0.2
    t = np.linspace(0, 60, 121)
    i0 = 20
    a, b = th.ab_ode(t[i0:], 0.3, 0.6, r, lam, th.HermiteSums.of(make_activation("abs")))
    a_hat, b_hat = np.full((3, 121, r), 0.01), np.full((3, 121, r), 0.5)
    a_hat[:, i0:] = a[:, None]
    b_hat[:, i0:] = b[:, None]
    a_hat[1, -1] += 0.2  # seed 1 leaves the ODE at the end
    found = np.zeros((3, 121))
    found[:2, i0:] = r  # seed 2 never finds every direction
    cfg = {"data": {"r": r}, "train": {"weight_decay": lam}}
    errs = mi.ab_errors(_Run({"t": t, "a_hat": a_hat, "b_hat": b_hat, "directions_found": found}, cfg))
    assert errs[0] < 1e-6 and errs[1] == pytest.approx(0.2, abs=1e-6) and errs[2] == float("inf")


def test_sample_coupling_claim_on_synthetic_runs():
    def weights(offset):  # [S, T, m, d]; the symmetrized run sits at 1, the others at 1 + offset
        return np.full((1, 3, 2, 2), 1.0 + offset)

    t = np.arange(3.0)

    def run(offset):
        return _Run({"t": t, "neuron_weights": weights(offset), "mass_total": np.full((1, 3), 2.0)},
                    {"model": {"width": 2}})

    def results(offsets, pop):
        runs = {"symmetrized-m2": run(0.0), "actual-m2": run(pop)}
        runs.update({f"sample-n{n}": run(o) for n, o in zip((10, 100, 1000), offsets)})
        return Results(get("multiindex2026/coupling"), "quick", runs)

    claim = next(c for c in get("multiindex2026/coupling").claims if c.id == "coupling-shrinks-with-n")
    m, ns, vals, pop = mi.sample_coupling(results((0.4, 0.2, 0.1), 0.08))
    assert m == 2 and ns == [10, 100, 1000]
    # Delta = offset sqrt(2), alpha = 2, ||v~_i|| = sqrt(2): Delta/sqrt(alpha) = Delta_max = offset
    assert vals[0] == pytest.approx((0.4, 0.4)) and pop == pytest.approx((0.08, 0.08))
    assert claim.fn(results((0.4, 0.2, 0.1), 0.08)).passed
    assert not claim.fn(results((0.4, 0.5, 0.1), 0.08)).passed  # not decreasing
    assert not claim.fn(results((0.4, 0.2, 0.1), 0.03)).passed  # far above the population value
