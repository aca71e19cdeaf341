"""flow_exact (event-driven ReLU gradient flow) and the event handling of flow_log: closed forms (§3.1 P7),
conservation across events, Assumption 1 (each hyperplane crossed at most once), the GD limit, Min et al.
App. E.3/E.4, agreement with ``method: flow`` on smooth pieces, refined event times and the event table."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer
from twolayer.activations import make_activation
from twolayer.api import RunError
from twolayer.config import ConfigError, load_config
from twolayer.train import kinks
from twolayer.train.event_flow import plain_out_grad


def _files(tmp_path, X, y, W, v, tag=""):
    np.savez(tmp_path / f"data{tag}.npz", X=np.asarray(X, float), y=np.asarray(y, float))
    np.savez(tmp_path / f"init{tag}.npz", W=np.asarray(W, float), v=np.asarray(v, float))
    return {"kind": "file", "path": str(tmp_path / f"data{tag}.npz")}, {"kind": "file", "path": str(tmp_path / f"init{tag}.npz")}


def _events(run):
    with np.load(run.path / "events.npz") as f:
        return {k: f[k] for k in f.files}


TOY = {"kind": "toy2d"}  # TOY-A: Assumption 1 holds (mu = cos 55 deg)
# one set of static solver settings and shapes (TOY-A, width 8, 3 seeds) for most tests: one compiled program
EXACT = {"method": "flow_exact", "rtol": 1e-11, "atol": 1e-30}


def _toy(method_train, init, width=8, seeds=None, points=12, metrics=("loss", "imbalance", "v", "w_norm"), loss="exponential",
         reduction="sum", activation="relu"):
    cfg = {"name": "ef", "data": TOY, "model": {"kind": "two_layer", "activation": activation, "width": width},
           "init": init, "loss": {"kind": loss, "reduction": reduction}, "train": method_train,
           "observe": {"points": points, "metrics": list(metrics)}}
    cfg["seeds" if seeds is not None else "seed"] = seeds if seeds is not None else 0
    return cfg


# -- §3.1 P7: the crossing time of two positive points ---------------------------------------------------

@pytest.mark.parametrize("theta0,phi0", [(0.3, 0.5), (0.1, 0.5), (0.01, 1.2)])
def test_two_point_crossing_time_matches_closed_form(tmp_path, out, theta0, phi0):
    """A balanced V+ neuron active on x1 only, at angle phi0 below x1, rotates as tan(phi/2) = tan(phi0/2) e^-t
    (exp loss, sum, eps -> 0) and enters S+ when it reaches x2's hyperplane: t = ln(tan(phi0/2)/tan(theta0/2))."""
    eps = 1e-12
    X = [[1.0, 0.0], [math.sin(theta0), math.cos(theta0)]]
    data, init = _files(tmp_path, X, [1, 1], [[eps * math.cos(phi0), -eps * math.sin(phi0)]], [eps])
    predicted = math.log(math.tan(phi0 / 2) / math.tan(theta0 / 2))
    run = twolayer.run({"name": "p7", "data": data, "init": init, "model": {"activation": "relu"},
                        "loss": {"kind": "exponential", "reduction": "sum"},
                        "train": {"method": "flow_exact", "time": 1.5 * predicted, "rtol": 1e-10, "atol": 1e-40},
                        "observe": {"points": 4, "metrics": ["loss"]}}, out=out)
    ev = _events(run)
    assert run.status == "completed" and list(ev["kind"]) == ["cross"]
    assert (ev["neuron"][0], ev["point"][0], ev["side"][0]) == (0, 1, 1)
    assert abs(ev["t"][0] - predicted) <= 1e-8 * predicted


# -- conservation, Assumption 1, the GD limit ---------------------------------------------------------------

def test_imbalance_is_conserved_across_events(out):
    """Delta_j = v_j^2 - ||w_j||^2 is a conservation law of the flow: across every event (crossings, dead-
    neuron stops) it stays constant to 1e-10 relative."""
    run = twolayer.run(_toy({**EXACT, "time": 3.0}, {"kind": "gaussian", "scale": 0.3}, seeds=3, points=30), out=out)
    ev = _events(run)
    assert run.status == "completed" and np.sum(ev["kind"] == "cross") >= 10
    tr = run.trajectory
    scale = np.maximum(tr["v"] ** 2, tr["w_norm"] ** 2)
    assert np.max(np.abs(tr["imbalance"] - tr["imbalance"][:, :1]) / scale) <= 1e-10


@pytest.fixture(scope="module")
def balanced_toy(tmp_path_factory):
    """TOY-A, balanced init 1e-6 (the theory's setting), exp-sum, to t = 40: alignment, growth and fitting."""
    return twolayer.run(_toy({**EXACT, "time": 40.0}, {"kind": "balanced", "scale": 1e-6}, seeds=3, points=40,
                             metrics=("loss", "imbalance", "v", "w_norm", "cone")), out=tmp_path_factory.mktemp("bal"))


def test_assumption1_each_hyperplane_crossed_at_most_once(balanced_toy):
    """Under Assumption 1 with balanced init, y_i sign(v_j) <x_i, w_j> never decreases (eq. 46): at most n h
    crossings, each (neuron, point) at most once, in the direction of y_i sign(v_j); no Filippov slides
    (the only stays are dead neurons on the boundary of S_dead, with lam = 0)."""
    run = balanced_toy
    ev = _events(run)
    assert run.status == "completed" and len(ev["t"]) >= 10
    n, h = 5, 8
    y = np.array([1, 1, 1, -1, -1.0])
    v0 = run.trajectory["v"][:, 0]
    for s in range(3):
        mine = ev["seed"] == s
        cross = mine & (ev["kind"] == "cross")
        assert cross.sum() <= n * h
        pairs = list(zip(ev["neuron"][cross], ev["point"][cross]))
        assert len(pairs) == len(set(pairs))
        direction = y[ev["point"][cross]] * np.sign(v0[s][ev["neuron"][cross]])
        np.testing.assert_array_equal(ev["side"][cross], direction.astype(int))
        slides = mine & (ev["kind"] == "slide")
        assert np.all(ev["lam"][slides] == 0) and np.all(ev["side"][slides] == -1)
        assert set(ev["kind"][mine]) <= {"cross", "slide"}
        assert run.trajectory["pattern_changes"][s, -1] == mine.sum()  # the derived observable
    assert all(t is not None for t in run.summary["events"]["t1"])


@pytest.mark.slow
def test_gd_converges_to_the_flow_with_order_one(out):
    """||theta_GD(T) - theta_flow(T)|| ~ C lr through the activation changes in [0, T]: halving lr twice, the
    measured orders are within 0.1 of 1. (Per seed the order jitters by +-0.3: where a crossing falls within
    a GD step is a phase that changes with lr; summed over ~270 crossings it averages out.)"""
    T, init = 2.0, {"kind": "gaussian", "scale": 0.3}
    flow = twolayer.run(_toy({**EXACT, "time": T}, init, width=64, seeds=8, points=3, metrics=("loss",)), out=out)
    assert np.sum(_events(flow)["kind"] == "cross") >= 200  # the interval is far from a smooth piece
    errors = []
    for lr in (2e-3, 1e-3, 5e-4):
        gd = twolayer.run(_toy({"method": "gd", "lr": lr, "time": T}, init, width=64, seeds=8, points=3,
                               metrics=("loss",)), out=out)
        errors.append(math.sqrt(sum(np.sum((gd.final_params[k] - flow.final_params[k]) ** 2) for k in ("W", "v"))))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(orders - 1) <= 0.1), (errors, orders)


# -- App. E.3 and E.4 ------------------------------------------------------------------------------------------

def _single_neuron(tmp_path, out, label, a, time=1.0):
    data, init = _files(tmp_path, [[1.0, 0.0]], [label], [[0.0, 1.0]], [1.0], tag=f"{label}{a}")
    act = "relu" if a == 0 else {"name": "relu", "grad_at_zero": a}
    return twolayer.run({"name": "e34", "data": data, "init": init, "model": {"activation": act},
                         "loss": {"kind": "exponential", "reduction": "sum"},
                         "train": {"method": "flow_exact", "time": time, "rtol": 1e-11, "atol": 1e-14},
                         "observe": {"points": 4, "metrics": ["loss"]}}, out=out)


def test_app_e3_regular_solution_exists_only_for_zero_subgradient(tmp_path, out):
    """E.3: x = [1, 0], y = -1, w(0) = [0, 1], v(0) = 1. With sigma'(0) = 0 the neuron stays put (a slide of
    weight 0: the regular solution); with sigma'(0) = a > 0 there is no Caratheodory solution: the run fails
    and says when, which neuron and which data point."""
    stay = _single_neuron(tmp_path, out, -1.0, 0.0)
    assert stay.status == "completed"
    np.testing.assert_array_equal(stay.final_params["W"], [[0.0, 1.0]])
    np.testing.assert_array_equal(stay.final_params["v"], [1.0])
    ev = _events(stay)
    assert list(ev["kind"]) == ["slide"] and ev["t"][0] == 0 and ev["lam"][0] == 0
    none = _single_neuron(tmp_path, out, -1.0, 0.5)
    assert none.status == "failed"
    message = none.summary["message"]
    assert "Caratheodory" in message and "t = 0" in message and "neuron 0" in message and "data point 0" in message
    assert list(_events(none)["kind"]) == ["fail"]


def test_app_e4_non_unique_takes_the_regular_solution(tmp_path, out):
    """E.4: y = +1. With sigma'(0) = 0 both sides point away from the plane (non-unique); the regular,
    stay-put solution is taken and recorded as nonunique. With sigma'(0) = a > 0 the only Caratheodory
    solution leaves at once along eq. (47), which the run follows (checked against solve_ivp)."""
    from scipy.integrate import solve_ivp

    stay = _single_neuron(tmp_path, out, 1.0, 0.0)
    np.testing.assert_array_equal(stay.final_params["W"], [[0.0, 1.0]])
    assert list(_events(stay)["kind"]) == ["nonunique"]
    leave = _single_neuron(tmp_path, out, 1.0, 0.5)
    assert list(_events(leave)["kind"]) == ["cross"] and _events(leave)["side"][0] == 1

    def eq47(t, s):  # w = (z, 1), v; exp loss, y = 1: w' = e^{-v z} v x, v' = e^{-v z} z
        z, v = s
        return [math.exp(-v * z) * v, math.exp(-v * z) * z]

    ref = solve_ivp(eq47, (0.0, 1.0), [0.0, 1.0], method="DOP853", rtol=1e-12, atol=1e-14).y[:, -1]
    np.testing.assert_allclose([leave.final_params["W"][0, 0], leave.final_params["v"][0]], ref, rtol=1e-8)
    np.testing.assert_array_equal(leave.final_params["W"][0, 1], 1.0)


# -- smooth pieces: the same flow as ``method: flow`` ----------------------------------------------------------

@pytest.mark.parametrize("activation,time", [("linear", 3.0), ("relu", 0.02)])
def test_agrees_with_flow_where_the_pattern_does_not_change(out, activation, time):
    """Linear activation (no kink), and ReLU up to a time before the first crossing: flow_exact is the
    adaptive flow of the same field, so both agree to solver tolerance."""
    def cfg(method, time):
        return _toy({**EXACT, "method": method, "time": time}, {"kind": "gaussian", "scale": 0.3}, seeds=3, points=3,
                    metrics=("loss",), activation=activation)

    if activation == "relu":  # stop at half the first crossing time
        first = _events(twolayer.run(cfg("flow_exact", time), out=out))["t"]
        assert first.size and first.min() > 0
        time = 0.5 * float(first.min())
    exact, smooth = (twolayer.run(cfg(m, time), out=out) for m in ("flow_exact", "flow"))
    assert len(_events(exact)["t"]) == 0
    for k in ("W", "v"):
        np.testing.assert_allclose(exact.final_params[k], smooth.final_params[k], rtol=1e-9, atol=1e-12)


def test_runs_where_the_adaptive_flow_stalls(out):
    """A config on which ``method: flow`` stalls at a kink (it ends ``failed``, the solver could not advance)
    runs to the end with flow_exact."""
    from conftest import base_config

    cfg = base_config(model={"activation": {"name": "leaky_relu", "slope": 0.1}, "width": 4},
                      init={"kind": "gaussian", "scale": 1e-3},
                      train={"method": "flow_exact", "time": 20.0, "max_solver_steps": 2000},
                      observe={"points": 5, "metrics": ["loss"]})
    stalled = twolayer.run({**cfg, "train": {**cfg["train"], "method": "flow"}}, out=out)
    assert stalled.status == "failed" and "could not advance" in stalled.summary["message"]
    run = twolayer.run(cfg, out=out)
    assert run.status == "completed" and run.summary["t_end"] == 20.0
    assert len(_events(run)["t"]) > 0


def test_zero_input_columns_are_left_out_exactly(tmp_path, monkeypatch):
    """Input columns that are zero in every sample (MNIST's borders) are left out of the products X W' and G' X
    (``Context.training_view``'s support): the same events, times and parameters as with every column, weight decay
    included (it alone moves the weights of the dropped columns)."""
    from twolayer import problem
    from twolayer.train import Simulation

    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(6, 2)), np.zeros((6, 2))], axis=1)
    data, init = _files(tmp_path, X, [1, 1, 1, -1, -1, -1], rng.normal(scale=0.3, size=(4, 4)),
                        rng.normal(scale=0.3, size=4))
    cfg = load_config({"name": "support", "data": data, "init": init, "model": {"activation": "relu", "width": 4},
                       "loss": {"kind": "exponential", "reduction": "sum"},
                       "train": {**EXACT, "time": 3.0, "weight_decay": 0.05},
                       "observe": {"points": 5, "metrics": ["loss"]}})

    def run():
        sim = Simulation(cfg)
        state = sim.run(sim.initial_state())
        return sim, sim.event_table(state), jax.device_get(state.params)

    sim, dropped, p_dropped = run()
    assert sim.ctx.arrays["support"].shape == (2,)
    monkeypatch.setattr(problem, "ZERO_COLUMNS_MIN_FRACTION", 2.0)  # no column is dropped
    sim, full, p_full = run()
    assert "support" not in sim.ctx.arrays
    assert np.sum(full["kind"] == "cross") >= 2
    for k in ("neuron", "point", "kind", "side"):
        np.testing.assert_array_equal(dropped[k], full[k])
    np.testing.assert_allclose(dropped["t"], full["t"], rtol=1e-12)
    for k in ("W", "v"):
        np.testing.assert_allclose(p_dropped[k], p_full[k], rtol=1e-12, atol=1e-15)
    assert np.all(np.asarray(p_full["W"])[..., 2:] != 0)  # weight decay moved them, from nonzero starts


# -- events at solver accuracy ----------------------------------------------------------------------------------

def test_alignment_time_is_refined_to_an_event_time(balanced_toy):
    """t1 (Theorem 1) changes only at an activation event: the summary's t1 is refined from the observation
    grid to within 1e-8 of a crossing or stop in the event table (while the grid is 5% coarse)."""
    run = balanced_toy
    ev = _events(run)
    t_grid = run.trajectory["t"]
    for s, t1 in enumerate(run.summary["events"]["t1"]):
        times = ev["t"][ev["seed"] == s]
        assert np.min(np.abs(times - t1)) <= 1e-8 * t1
        assert np.min(np.abs(t_grid - t1)) > 1e-4 * t1  # not a grid point: refined
    import pandas as pd

    table = pd.DataFrame(dict(np.load(run.path / "events.npz")))
    assert list(table.columns) == ["t", "seed", "neuron", "point", "kind", "side", "lam"] and len(table) == len(ev["t"])


def test_min2024_events_do_not_depend_on_the_observation_grid(balanced_toy, tmp_path):
    """t1, norm_growth and t2 come out at solver accuracy: with a different observation grid (29 instead of 40
    log-spaced points, 5-8% apart) every event agrees to 1e-8 relative, and none is a grid point."""
    metrics = ("loss", "imbalance", "v", "w_norm", "cone", "subnet_fit")
    runs = [twolayer.run(_toy({**EXACT, "time": 40.0}, {"kind": "balanced", "scale": 1e-6}, seeds=3, points=p,
                              metrics=metrics), out=tmp_path) for p in (40, 29)]
    compared = 0
    for key in ("t1", "norm_growth", "t2"):
        a, b = (np.array([np.nan if x is None else x for x in r.summary["events"][key]], dtype=float) for r in runs)
        assert np.array_equal(np.isnan(a), np.isnan(b)), key
        assert key == "t2" or not np.any(np.isnan(a)), (key, a)  # t1 and the norm growth happen before t = 40
        for r, values in zip(runs, (a, b)):
            grid = r.trajectory["t"]
            for x in values[~np.isnan(values)]:
                assert np.min(np.abs(grid - x)) > 1e-6 * x, (key, x)  # refined, not a grid point
        np.testing.assert_allclose(a, b, rtol=1e-8, err_msg=key)
        compared += int(np.sum(~np.isnan(a)))
    assert compared >= 6


def test_every_observable_works_with_flow_exact(tmp_path):
    """Every two-layer observable that gd records on an empirical example problem is recorded by flow_exact on
    the same problem: same keys, shapes and dtypes, finite wherever gd's values are finite."""
    from twolayer.observe import OBSERVABLES

    examples = [  # two-layer problems with an empirical objective (as tests/test_conformance.py's EXAMPLES)
        {"data": {"kind": "two_points", "angle": 1.2, "labels": [1, -1]}, "model": {"activation": "relu"}},
        {"data": {"kind": "toy2d"}, "model": {"activation": "relu"}},
        {"data": {"kind": "symmetric_separable", "d": 3, "n": 8},
         "model": {"activation": {"name": "leaky_relu", "slope": 0.2}}, "loss": {"kind": "logistic"}},
        {"data": {"kind": "multi_index", "d": 6, "r": 2, "n": 40, "n_test": 20, "activation": "relu"},
         "model": {"activation": "relu"}, "loss": {"kind": "square"}},
    ]

    def config(example, train, metrics):
        return {"name": "obs", "seeds": 2, "data": example["data"],
                "model": {"kind": "two_layer", "width": 5, **example["model"]}, "init": {"kind": "gaussian", "scale": 0.5},
                "loss": {"reduction": "mean", "kind": "logistic", **example.get("loss", {})},
                "train": train, "observe": {"points": 6, "metrics": list(metrics)}}

    def accepts(example, train, name):
        try:
            twolayer.train.Simulation(load_config(config(example, train, [name])))
            return True
        except (ConfigError, KeyError, ValueError):
            return False

    gd, exact = {"method": "gd", "lr": 0.01, "time": 1.0}, {"method": "flow_exact", "time": 1.0}
    groups, missing = {}, []
    for name, obs in OBSERVABLES.items():
        if not obs.supports("two_layer"):
            continue
        where = [i for i, e in enumerate(examples) if accepts(e, gd, name)]
        if where:
            groups.setdefault(where[0], []).append(name)
            if not accepts(examples[where[0]], exact, name):
                missing.append(name)
    assert not missing, f"observables gd records but flow_exact refuses: {missing}"
    assert sum(map(len, groups.values())) >= 20
    for i, names in groups.items():
        ref = twolayer.run(config(examples[i], gd, names), out=tmp_path)
        run = twolayer.run(config(examples[i], exact, names), out=tmp_path)
        assert run.status == "completed", run.summary["message"]
        for key, value in ref.trajectory.items():
            if key in ("t", "step"):
                continue
            got = run.trajectory[key]
            assert got.shape == value.shape and got.dtype == value.dtype, (key, got.shape, value.shape)
            if np.issubdtype(value.dtype, np.floating):
                assert np.all(np.isfinite(got[np.isfinite(value)])), key


# -- flow_log: the late-phase clock across kinks ------------------------------------------------------------------

def test_flow_log_runs_past_kinks_on_non_symmetric_data(out):
    """Leaky ReLU 0.2, width 9, logistic mean, balanced 1e-4, 24 separable non-symmetric points in 3-D: the
    adaptive diffrax flow_log stalled at tau ~ 3 (a slide along a kink); the event-driven one slides and ends."""
    cfg = {"name": "late", "data": {"kind": "separable_ball", "d": 3, "n": 24, "seed": 3},
           "model": {"kind": "two_layer", "activation": {"name": "leaky_relu", "slope": 0.2}, "width": 9},
           "init": {"kind": "balanced", "scale": 1e-4}, "loss": {"kind": "logistic", "reduction": "mean"},
           "train": {"method": "flow_log", "time": 20.0, "rtol": 1e-6, "atol": 1e-300, "max_solver_steps": 20000},
           "observe": {"points": 12, "metrics": ["log_loss", "normalized_margin"]}, "seeds": 2}
    run = twolayer.run(cfg, out=out)
    assert run.status == "completed" and run.summary["t_end"] == 20.0
    ev = _events(run)
    assert "slide" in set(ev["kind"]) and np.all(ev["t"] <= 20.0)
    assert all(ll < -10 for ll in run.summary["final"]["log_loss"])


# -- config ------------------------------------------------------------------------------------------------------

def test_config_errors_name_the_field():
    base = _toy({"method": "flow_exact", "time": 1.0}, {"kind": "gaussian", "scale": 0.3})
    for override, field in ((("model.activation", "sym_gelu"), "model.activation"),
                            (("train.solver", "heun"), "train.solver"),
                            (("train.lr", 0.1), "train.lr")):
        with pytest.raises(ConfigError) as err:
            load_config(base, dict([override]))
        assert any(path == field for path, _ in err.value.errors), err.value.errors
    with pytest.raises(ConfigError) as err:
        load_config({**base, "model": {"kind": "mean_field", "activation": "relu", "width": 4},
                     "init": {"kind": "gaussian", "scale": 0.3}})
    assert any(path == "train.method" and "mean_field" in message for path, message in err.value.errors)
    # sigma'(0) = 0 is today's relu: the same resolved config (and hash)
    explicit = load_config(base, {"model.activation": {"name": "relu", "grad_at_zero": 0}})
    assert explicit.config_hash() == load_config(base).config_hash()


# -- the pure core: one-sided velocities, the decision, hyperplane groups ----------------------------------------

def test_one_sided_velocities_match_the_frozen_field():
    """zdot^+/- from the Gram-matrix formulas equal <x_i, dw_j/dt> of the frozen field with group i put on each
    side and neuron j's other slides projected out (random data with a parallel pair and two slides)."""
    rng = np.random.default_rng(0)
    n, d, h = 6, 4, 3
    X = rng.normal(size=(n, d))
    X[4] = -2.0 * X[1]  # parallel to x_1: one hyperplane
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    W, v = rng.normal(size=(h, d)), rng.normal(size=h)
    groups = kinks.hyperplane_groups(X)
    assert list(groups["rep"]) == [0, 1, 2, 3, 1, 5] and groups["orient"][4] == -1
    rep, orient, members = (jnp.asarray(groups[k]) for k in ("rep", "orient", "members"))
    act = make_activation({"name": "leaky_relu", "slope": 0.2})
    kink = kinks.kink_of(act)
    from twolayer.losses import LOSSES
    from twolayer.nets import NETS
    from twolayer.problem import Problem

    prob = Problem(NETS.get("two_layer"), act, LOSSES.get("logistic"), "mean")
    out_grad = plain_out_grad(prob, jnp.asarray(y))
    modes = np.where(rng.random((n, h)) < 0.5, -1, 1).astype(np.int8)
    modes[2, 0], modes[5, 0] = 0, 0  # neuron 0 slides along two hyperplanes
    slots = np.array([[2, 5], [-1, -1], [-1, -1]], dtype=np.int32)
    Xj, vj = jnp.asarray(X), jnp.asarray(v)
    checked = 0
    for i in (0, 1, 2, 3, 5):
        for j in range(h):
            # at an event w_j lies on x_i's plane and on its slides' planes
            normals = X[[i] + [k for k in slots[j] if k >= 0]]
            Wij = W.copy()
            Wij[j] -= normals.T @ np.linalg.lstsq(normals.T, W[j], rcond=None)[0]
            Wj = jnp.asarray(Wij)
            zp, zm = kinks.one_sided_velocities(Wj, vj, Xj, jnp.asarray(modes), jnp.asarray(slots),
                                                (rep, orient, members), kink, out_grad, 0.0, weight_decay=0.0)
            for side, value in ((1, zp), (-1, zm)):
                m = modes.copy()
                m[i, j] = side
                s = slots.copy()
                s[j] = sorted((k if k != i else -1 for k in s[j]), key=lambda k: k < 0)
                D = kinks.slopes(kinks.point_modes(jnp.asarray(m), rep, orient), kink, Xj.dtype)
                Q = kinks.slide_basis(jnp.asarray(s), Xj)
                dW, _, _ = kinks.frozen_field(Wj, vj, Xj, D, Q, out_grad, 0.0, first_only=False, weight_decay=0.0)
                np.testing.assert_allclose(float(value[i, j]), float(Xj[i] @ dW[j]), rtol=1e-10, atol=1e-12)
                checked += abs(float(value[i, j])) > 1e-3
    assert checked >= 20


def test_classify_decision_table():
    """cross / slide / nonunique / fail / tangent from the signs of the one-sided normal velocities."""
    relu = kinks.kink_of(make_activation("relu"))
    relu_a = kinks.kink_of(make_activation({"name": "relu", "grad_at_zero": 0.5}))
    zp = jnp.array([1.0, -1.0, -1.0, -2.0, 1.0, 1.0, 0.0, 2.0])
    zm = jnp.array([2.0, -3.0, 0.0, 1.0, 0.0, -1.0, 0.0, -2.0])
    mode, kind, lam = kinks.classify(zp, zm, relu)
    names = [kinks.KIND_NAMES.get(int(k), "none") for k in kind]
    assert names == ["cross", "cross", "slide", "slide", "nonunique", "nonunique", "none", "nonunique"]
    assert list(np.asarray(mode)[:6]) == [1, -1, -1, 0, -1, 0]
    np.testing.assert_allclose(np.asarray(lam)[[2, 3, 4]], [0.0, 1 / 3, 0.0])
    mode_a, kind_a, _ = kinks.classify(zp, zm, relu_a)
    assert int(kind_a[2]) == kinks.FAIL  # E.3 with sigma'(0) = 0.5
    assert int(kind_a[4]) == kinks.CROSS and int(mode_a[4]) == 1  # E.4: the only solution leaves
    assert int(kind_a[3]) == kinks.SLIDE  # an interior Filippov slide is followed for any sigma'(0)


def test_relu_grad_at_zero_changes_only_the_derivative_at_zero():
    a = make_activation({"name": "relu", "grad_at_zero": 0.25})
    z = jnp.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(a(z), make_activation("relu")(z))
    assert [float(jax.grad(a.fn)(x)) for x in z] == [0.0, 0.25, 1.0]
    assert float(jax.grad(make_activation("relu").fn)(0.0)) == 0.0


def test_flow_exact_compiles_with_its_cpu_options_and_they_change_no_bit(tmp_path, monkeypatch):
    """flow_exact's advance program is compiled with the method's ``cpu_compiler_options`` (XLA:CPU's fusion emitters
    off, ~25 % less compiling): an option XLA does not know fails the run, so the options reach the compiler; and
    the same run without them gives bitwise the same trajectory, final parameters and events."""
    from twolayer.train import METHODS, flow_exact, loop

    entry = METHODS.get("flow_exact")
    assert entry.cpu_compiler_options == flow_exact.CPU_COMPILER_OPTIONS != ()
    assert METHODS.get("flow_log").cpu_compiler_options == ()  # flow_log's outputs would change in the last bits
    cfg = _toy({**EXACT, "time": 2.0}, {"kind": "gaussian", "scale": 0.3}, seeds=3)

    def with_options(options):
        get = METHODS.get
        replaced = dataclasses.replace(entry, cpu_compiler_options=options)
        monkeypatch.setattr(METHODS, "get", lambda name: replaced if name == "flow_exact" else get(name))
        loop.compiled_advance.cache_clear()

    def outputs(run):
        arrays = {}
        for name in ("trajectory.npz", "final.npz", "events.npz"):
            with np.load(run.path / name) as f:
                arrays.update({f"{name}/{k}": f[k] for k in f.files})
        return arrays

    try:
        with_options((("xla_no_such_option", 1),))
        with pytest.raises(RunError, match="xla_no_such_option"):
            twolayer.run({**cfg, "name": "bad-option"}, out=tmp_path / "bad")
        with_options(())
        without = outputs(twolayer.run(cfg, out=tmp_path / "without"))
    finally:
        monkeypatch.undo()
        loop.compiled_advance.cache_clear()
    with_ = outputs(twolayer.run(cfg, out=tmp_path / "with"))
    assert without.keys() == with_.keys() and len(with_) > 6
    for key, value in with_.items():
        assert np.array_equal(value, without[key], equal_nan=value.dtype.kind == "f"), key
