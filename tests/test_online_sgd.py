"""Online SGD (issue 29): the order-parameter ODEs (``twolayer.theory.online_sgd``) against the linear closed form,
against twolayer's exact population gradient flow, and against small-d simulations of method ``online_sgd``
on ``teacher_student`` data; the data kind and the method's config errors (exit 2, the field named)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import twolayer
from twolayer.cli import main
from twolayer.theory import online_sgd as ode


def teacher_student(d=200, K=2, M=2, eta=1.0, steps_per_d=12, seeds=4, act="erf", noise=0.0, layers="both", **data):
    return {
        "name": "ts", "seeds": seeds,
        "data": {"kind": "teacher_student", "d": d, "teacher_width": M, "activation": act, "noise": noise, "n": 64,
                 **data},
        "model": {"kind": "two_layer", "activation": act, "width": K},
        "init": {"kind": "standard"}, "loss": {"kind": "square", "reduction": "mean"},
        "train": {"method": "online_sgd", "lr": eta / d, "steps": steps_per_d * d, "layers": layers},
        "observe": {"schedule": "every", "every": d, "metrics": ["Q", "R", "T", "v", "eps_g"]},
    }


def deviation(run, eta, act, **kw):
    """max over seeds and time of |SGD - ODE| in Q, R, v, each seed's ODE started at its own initial state."""
    tr = run.trajectory
    out = []
    for s in range(tr["Q"].shape[0]):
        sol = ode.integrate(tr["Q"][s, 0], tr["R"][s, 0], tr["v"][s, 0], tr["T"][s, 0],
                            np.asarray(run.config["data"].get("teacher_weights") or np.ones(tr["T"].shape[-1])),
                            tr["t"] / eta, activation=act, eta=eta, layers=run.config["train"]["layers"], **kw)
        out.append(max(np.abs(sol.Q - tr["Q"][s]).max(), np.abs(sol.R - tr["R"][s]).max(),
                       np.abs(sol.v - tr["v"][s]).max()))
    return np.asarray(out)


def test_linear_ode_matches_its_closed_form():
    """The general ODE with g = x, first layer only, eta^2 term and label noise, equals the closed-form solution
    (``linear_solution``) to solver accuracy, and converges to the noise floor eta K sigma^2 / (2 (2 - eta K))."""
    rng = np.random.default_rng(0)
    W, Ws = rng.normal(size=(3, 50)) / np.sqrt(50), rng.normal(size=(2, 50)) / np.sqrt(50)
    Q, R, T = ode.order_parameters(0.5 * W, Ws)
    times = np.linspace(0.0, 40.0, 9)
    sol = ode.integrate(Q, R, np.ones(3), T, np.ones(2), times, activation="linear", eta=0.2, layers="first",
                        noise=0.5)
    exact = ode.linear_solution(Q, R, T, np.ones(2), times, eta=0.2, noise=0.5)
    np.testing.assert_allclose(sol.eps_g, exact, rtol=1e-6)
    assert exact[-1] == pytest.approx(ode.noise_floor_linear(3.0, 0.2, 0.5), rel=1e-6)
    without = ode.integrate(Q, R, np.ones(3), T, np.ones(2), times, activation="linear", eta=0.2, layers="first",
                            noise=0.5, eta2=False)
    assert without.eps_g[-1] < 1e-6  # no eta^2 term: no noise floor


def test_small_lr_limit_is_the_population_gradient_flow(out):
    """Without the eta^2 term the ODE at Goldt time t is the exact population gradient flow (method flow, objective
    population, multi_index data: abs, orthonormal directions) at time eta t, to solver accuracy."""
    cfg = {"name": "pop", "seed": 0,
           "data": {"kind": "multi_index", "d": 12, "r": 2, "n": 8, "n_test": 8, "activation": "abs"},
           "model": {"kind": "two_layer", "activation": "abs", "width": 3}, "init": {"kind": "standard"},
           "loss": {"kind": "square", "reduction": "mean"}, "objective": "population",
           "train": {"method": "flow", "time": 6.0, "rtol": 1e-10, "atol": 1e-12},
           "observe": {"schedule": "every", "every": 1.0, "metrics": ["Q", "R", "T", "v", "eps_g"]}}
    run = twolayer.run(cfg, out=out)
    tr = run.trajectory
    eta = 0.5
    sol = ode.integrate(tr["Q"][0], tr["R"][0], tr["v"][0], tr["T"][0], np.ones(2), tr["t"] / eta, activation="abs",
                        eta=eta, eta2=False, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sol.Q, tr["Q"], atol=1e-6)
    np.testing.assert_allclose(sol.R, tr["R"], atol=1e-6)
    np.testing.assert_allclose(sol.v, tr["v"], atol=1e-6)
    assert np.abs(tr["R"][-1] - tr["R"][0]).max() > 0.1  # it did move


def test_ode_tracks_sgd_and_needs_the_eta2_term(out):
    """At d = 200 (4 seeds, erf, K = M = 2, eta = 1) the SGD order parameters stay within 0.15 of the ODE started
    at each seed's initial state (fluctuations ~ 1/sqrt(d) = 0.07); at eta = 3 the ODE without the eta^2 term
    deviates more than twice as much as the full ODE."""
    run = twolayer.run(teacher_student(eta=1.0), out=out)
    assert run.status == "completed"
    assert deviation(run, 1.0, "erf").max() < 0.15
    fast = twolayer.run(teacher_student(eta=3.0, steps_per_d=6, layers="first"), out=out)
    full = deviation(fast, 3.0, "erf")
    flow = deviation(fast, 3.0, "erf", eta2=False)
    assert np.median(flow) > 2 * np.median(full), (full, flow)



def test_a_batch_of_b_fresh_samples_divides_the_eta2_term(out):
    """Online SGD with batch_size B = 10 (B fresh samples a step, at d = 200, eta = 3, first layer, erf K = M = 2)
    follows the ODE whose eta^2 term is divided by B, not the one of batch 1: its median deviation from the latter
    is more than twice that from the former."""
    cfg = teacher_student(eta=3.0, steps_per_d=6, layers="first")
    cfg["train"]["batch_size"] = 10
    run = twolayer.run(cfg, out=out)
    assert run.status == "completed"
    batched = deviation(run, 3.0, "erf", batch=10)
    single = deviation(run, 3.0, "erf", batch=1)
    assert np.median(single) > 2 * np.median(batched), (batched, single)

def test_teacher_student_data():
    from twolayer.config import load_config
    from twolayer.data import build_dataset

    cfg = load_config(teacher_student(d=40, M=3, noise=0.0, teacher="orthogonal", teacher_weights=[1.0, -1.0, 2.0]))
    data = build_dataset(cfg.data)
    W = data.context["target_dirs"]
    np.testing.assert_allclose(W @ W.T, np.eye(3), atol=1e-12)
    from twolayer.activations import make_activation
    np.testing.assert_allclose(data.y, np.asarray(make_activation("erf")(data.X @ W.T)) @ [1.0, -1.0, 2.0])
    skewed = build_dataset(load_config(teacher_student(d=40, spectrum_decay=1.0)).data)
    assert skewed.context["input_scale"].mean() ** 2 != pytest.approx(1.0)
    assert np.mean(skewed.context["input_scale"] ** 2) == pytest.approx(1.0)


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"data": {"kind": "two_points", "angle": 1.2, "labels": [1, -1]}}, "data.kind", ("teacher_student",)),
    ({"loss": {"kind": "logistic", "reduction": "mean"}}, "loss.kind", ("square",)),
    ({"model": {"kind": "two_layer", "activation": "relu", "width": 2}}, "model.activation", ("erf",)),
    ({"data": {"kind": "teacher_student", "d": 10, "teacher_width": 2, "teacher_weights": [1.0]}},
     "data.teacher_weights", ("teacher_width",)),
    ({"data": {"kind": "teacher_student", "d": 10, "noise": -1.0}}, "data.noise", ()),
    ({"train": {"method": "online_sgd", "lr": 0.01, "steps": 10, "batch_size": 0}}, "train.batch_size", ()),
])
def test_config_errors_exit_2_naming_the_field(tmp_path, capsys, change, field, words):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**teacher_student(d=10, seeds=1), **change}))
    code = main(["run", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert any(line.startswith(f"  {field}:") for line in err.splitlines()), err
    for w in words:
        assert w in err


def test_symmetric_plateau_height_and_escape():
    """Erf soft committee machine (K = M = 2, v = 1): the ODE from a nearly symmetric start sits at the symmetric
    fixed point's height, and shrinking the initial asymmetry delta0 by 100 lengthens the plateau by
    ln(100) / rate (the linearization's largest eigenvalue) within 10 %."""
    Q0, R0, v0, T, vstar = 0.2 * np.eye(2), np.full((2, 2), 1e-3), np.ones(2), np.eye(2), np.ones(2)
    p = ode.symmetric_plateau(Q0, R0, v0, T, vstar, activation="erf", eta=1.0, layers="first")
    assert p.rate > 0 and 0.005 < p.height < 0.1
    ts = np.concatenate([[0.0], np.geomspace(0.1, 400.0, 300)])
    escapes = []
    for delta in (1e-3, 1e-5):
        R = R0 + delta * np.array([[1.0, -1.0], [-1.0, 1.0]])
        sol = ode.integrate(Q0, R, v0, T, vstar, ts, activation="erf", eta=1.0, layers="first")
        on = (ts > 30) & (ts < 60)
        np.testing.assert_allclose(sol.eps_g[on], p.height, rtol=0.05)
        escapes.append(ts[np.flatnonzero((ts > 10) & (sol.eps_g < 0.5 * p.height))[0]])
    assert escapes[1] - escapes[0] == pytest.approx(np.log(100.0) / p.rate, rel=0.1)


def test_symmetric_plateau_stays_symmetric_and_sets_the_log_slope():
    """The fixed point is refined inside the student-symmetric subspace (Q symmetric with equal diagonal, equal rows
    of R; Newton on the full state drifted to Q_12 != Q_21 and a rate off by 0.2 %), and the ODE's plateau length
    grows by ln(10) / rate per decade of the initial overlap once the settling transient has died down (erf
    K = M = 2, eta = 1.2, first layer: the local slope at R0 ~ 1e-8 is 1/rate within 0.1 %)."""
    Q0, T, vstar = 0.08 * np.eye(2), np.eye(2), np.ones(2)
    R0 = np.array([[0.0101, -0.004], [-0.0192, 0.0048]])
    p = ode.symmetric_plateau(Q0, R0, np.ones(2), T, vstar, activation="erf", eta=1.2, layers="first")
    np.testing.assert_allclose(p.Q, p.Q.T, atol=1e-14)
    assert p.Q[0, 0] == pytest.approx(p.Q[1, 1], abs=1e-14)
    np.testing.assert_allclose(p.R[0], p.R[1], atol=1e-14)
    assert p.rate > 0 and p.rate_error < 1e-10 and 0 < p.slowest_stable() < p.rate
    ts = np.linspace(0.0, 400.0, 40001)
    escapes = []
    for c in (1e-6, 1e-7):
        sol = ode.integrate(Q0, c * R0, np.ones(2), T, vstar, ts, activation="erf", eta=1.2, layers="first",
                            rtol=1e-10, atol=1e-14)
        escapes.append(ts[np.flatnonzero(sol.eps_g < 0.5 * p.height)[0]])
    assert (escapes[1] - escapes[0]) / np.log(10.0) == pytest.approx(1 / p.rate, rel=1e-3)


def test_plateaus_of_one_shape_share_their_compiled_programs():
    """The fixed point's Newton steps and Jacobians are compiled once per (activation, K, M), not per call: a second
    plateau at another eta and teacher traces nothing new (each call compiled three programs before, 4 s for erf
    K = M = 2)."""
    import jax.monitoring as mon

    traced = []

    def listen(name, secs, **kw):
        if name.endswith("jaxpr_trace_duration"):
            traced.append(kw.get("fun_name"))

    args = (0.2 * np.eye(2), np.full((2, 2), 1e-3), np.ones(2), np.eye(2), np.ones(2))
    first = ode.symmetric_plateau(*args, activation="erf", eta=1.0, layers="first")
    mon.register_event_duration_secs_listener(listen)
    try:
        again = ode.symmetric_plateau(*args[:3], 0.9 * np.eye(2), args[4], activation="erf", eta=0.7, layers="first")
    finally:
        mon.unregister_event_duration_listener(listen)
    assert not [name for name in traced if name in ("reduced_field", "flat_field")], traced
    assert again.height != first.height  # the new teacher and eta reached the shared programs as values


def test_the_ode_solve_can_be_kept_by_the_persistent_cache():
    """JAX never writes a program with a host callback to its persistent cache; equinox's raising checks (diffrax's
    check of the save times) are callbacks, so ``twolayer.backend`` makes them NaN checks and ``integrate`` checks the
    times itself."""
    import jax
    import jax.numpy as jnp

    y0 = {"Q": jnp.eye(2), "R": jnp.zeros((2, 2)), "v": jnp.ones(2)}
    args = (jnp.eye(2), jnp.ones(2), 0.5, 0.0, 1.0, 1.0, 1.0)
    for solver in ode.SOLVERS:
        jaxpr = str(jax.make_jaxpr(ode._solver("erf", 100, "distinct", solver))(y0, jnp.linspace(0.0, 1.0, 3), args,
                                                                                1e-8, 1e-10))
        assert "callback" not in jaxpr, solver
    with pytest.raises(ValueError, match="non-decreasing"):
        ode.integrate(*y0.values(), np.eye(2), np.ones(2), [0.0, 2.0, 1.0], activation="erf", eta=0.5)
    with pytest.raises(ValueError, match="solver 'rk4' is not one of tsit5, ros34pw2"):
        ode.integrate(*y0.values(), np.eye(2), np.ones(2), [0.0, 1.0], activation="erf", eta=0.5, solver="rk4")


def test_the_solve_runs_with_one_blas_thread_and_restores_the_count(monkeypatch):
    """``integrate`` holds every loaded BLAS / LAPACK library to one thread while the compiled solve runs (OpenBLAS's
    threads beside XLA's nearly doubled ROS34PW2's time), and gives the previous counts back afterwards."""
    import threadpoolctl

    def counts():
        return {i["filepath"]: i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}

    seen, real = [], ode._solver

    def spy(*key):
        solve = real(*key)

        def counted(*args):
            seen.append(counts())
            return solve(*args)

        return counted

    import scipy.linalg  # noqa: F401  (its OpenBLAS loaded, as in any process that has run a solve)

    before = counts()
    monkeypatch.setattr(ode, "_solver", spy)
    y = state_erf()
    ode.integrate(*y, np.linspace(0.0, 1.0, 3), activation="erf", eta=0.5, solver="ros34pw2")
    assert seen and before and all(set(c.values()) == {1} and set(c) >= set(before) for c in seen), (before, seen)
    assert counts() == before


def state_erf():
    return np.eye(2), 0.1 * np.ones((2, 2)), np.ones(2), np.eye(2), np.ones(2)


def test_the_rosenbrock_w_solver_draws_tsit5s_curve():
    """relu K = 3 > M = 2, eta = 0.5, eta^2 term, both layers, to Goldt time 50 (the curve moves by O(1)): ROS34PW2,
    whose W is only the first-order part of the Jacobian, gives Tsit5's solution to 1e-6 at rtol 1e-8 (measured:
    2e-7 in Q), with and without the eta^2 term."""
    rng = np.random.default_rng(1)
    W, Ws = rng.normal(size=(3, 60)) / np.sqrt(60), np.linalg.qr(rng.normal(size=(60, 2)))[0].T
    Q, R, T = ode.order_parameters(W, Ws)
    args = (Q, 0.3 * R, rng.normal(size=3) / 3, T, np.ones(2), np.linspace(0.0, 50.0, 6))
    for eta2 in (True, False):
        explicit = ode.integrate(*args, activation="relu", eta=0.5, eta2=eta2)
        rosenbrock = ode.integrate(*args, activation="relu", eta=0.5, eta2=eta2, solver="ros34pw2")
        for k in ("Q", "R", "v", "eps_g"):
            np.testing.assert_allclose(getattr(rosenbrock, k), getattr(explicit, k), rtol=0, atol=1e-6, err_msg=k)
        assert np.abs(explicit.R[-1] - explicit.R[0]).max() > 0.1


def test_the_rosenbrock_w_solver_is_not_held_by_stability_near_the_fixed_point():
    """erf K = M = 4 (benchmarks/online_sgd.py's state), eta = 0.5, to Goldt time 1e4 at rtol 1e-6: after the
    specialization Tsit5's step is bounded by its stability region (h |lambda_max| < ~3.3), ROS34PW2's (L-stable)
    only by its error estimate, so it takes under 0.6x Tsit5's steps (measured: 1,388 against 2,848), and the two
    solutions agree to 2e-5 (20 rtol; measured 4e-6) at every save time."""
    rng = np.random.default_rng(0)
    W, Ws = rng.normal(size=(4, 1000)) / np.sqrt(1000), np.linalg.qr(rng.normal(size=(1000, 4)))[0].T
    args = (W @ W.T, W @ Ws.T, rng.normal(size=4) / 2, Ws @ Ws.T, np.ones(4),
            np.concatenate([[0.0], np.geomspace(1.0, 1e4, 12)]))
    explicit = ode.integrate(*args, activation="erf", eta=0.5, rtol=1e-6, atol=1e-8)
    rosenbrock = ode.integrate(*args, activation="erf", eta=0.5, rtol=1e-6, atol=1e-8, solver="ros34pw2")
    assert rosenbrock.steps < 0.6 * explicit.steps, (rosenbrock.steps, explicit.steps)
    for k in ("Q", "R", "v"):
        np.testing.assert_allclose(getattr(rosenbrock, k), getattr(explicit, k), rtol=0, atol=2e-5, err_msg=k)
    assert explicit.eps_g[0] > 1.0 and explicit.eps_g[-1] < 1e-6  # from the start to the fixed point


def test_the_eta_width_sweep_example_draws_its_phase_diagram(tmp_path):
    """examples/sweeps/online-eta-width.yaml (eps_g against eta and K) expands to its 5 x 4 grid, and a copy with
    its base cut to 200 steps sweeps and draws the heatmap through the CLI (the example's commands)."""
    pytest.importorskip("pandas")
    from pathlib import Path

    from twolayer.sweep import expand, load_sweep

    examples = Path(__file__).resolve().parents[1] / "examples" / "sweeps"
    assert len(expand(load_sweep(examples / "online-eta-width.yaml"))) == 5 * 4
    base = yaml.safe_load((examples / "online-sgd.yaml").read_text())
    base["train"]["steps"] = 200
    (tmp_path / "online-sgd.yaml").write_text(yaml.safe_dump(base))
    sweep = yaml.safe_load((examples / "online-eta-width.yaml").read_text())
    sweep["grid"] = {"train.lr": [0.0025, 0.01], "model.width": [1, 2]}
    (tmp_path / "online-eta-width.yaml").write_text(yaml.safe_dump(sweep))
    out = tmp_path / "out"
    assert main(["sweep", str(tmp_path / "online-eta-width.yaml"), "--out", str(out)]) == 0
    assert main(["plot", str(out / "online-eta-width"), "--x", "train.lr", "--y", "model.width",
                 "--metric", "eps_g"]) == 0
    assert (out / "online-eta-width" / "eps_g_vs_train.lr_vs_model.width.png").stat().st_size > 1000


def test_the_readme_figure_is_drawn_from_the_example_config(tmp_path):
    """examples/sweeps/online_sgd_figure.py (the README's figure) runs examples/sweeps/online-sgd.yaml as written and
    draws its SGD order parameters with the ODE from the same initial state: the run is that config's (4 seeds, d =
    200, 4000 steps), and the dashed and solid curves start at the same R and agree at the end to about 1/sqrt(d)."""
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "examples" / "sweeps" / "online_sgd_figure.py"
    module = runpy.run_path(str(script), run_name="figure")
    png = tmp_path / "online_sgd.png"
    assert module["main"](["--out", str(tmp_path / "out"), "--png", str(png)]) == 0
    assert png.stat().st_size > 10_000
    import twolayer
    from twolayer.explore.order_parameters import order_parameter_payload

    run = twolayer.run(module["CONFIG"], out=tmp_path / "out")  # a cache hit: the run the figure drew
    assert run.cached and run.config["seeds"] == 4 and run.config["data"]["d"] == 200
    payload = order_parameter_payload(run, "online-sgd", max_seeds=2)
    for seed in payload["seeds"]:
        for x in (s for s in seed["series"] if s["group"] == "R"):
            assert x["sgd"][0] == pytest.approx(x["ode"][0], abs=1e-6)
            assert abs(x["sgd"][-1] - x["ode"][-1]) < 3 / np.sqrt(200)
