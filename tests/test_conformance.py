"""Conformance: every entry of every engine registry passes one shared test, like scikit-learn's estimator
checks. A new entry without an example here fails ``test_every_*_has_an_example``.

- observables: run under jit and vmap over seeds, in float32 and float64, stable shapes, their dtype,
  finite values, declared axes, for every architecture they support;
- training methods: one seed alone equals the same seed inside a batch; float32 stays float32; resume
  after an interrupt is bitwise; the time axis is t = lr k (discrete) or the observation times (flows);
- dataset kinds: build from their defaults with the right shapes, dtypes and finite context arrays;
- initializations and objectives: finite values and finite gradients;
- events: run on a synthetic trajectory of the observables they need;
- activations: the capabilities their records declare (``kinks``, ``piecewise_linear``, ``leaky_alpha``) hold
  for their functions (finite differences, values);
- losses: likewise ``slope_at_zero``, ``log_per_sample``, ``margin_of_log`` and ``classification``.

Observables (and events) that read context arrays get them the way a run does: each case runs on the
first example problem below whose config validates with that metric and whose context the registered
providers can build.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer
from conftest import base_config
from twolayer.activations import ACTIVATIONS, make_activation
from twolayer.config import ConfigError, load_config
from twolayer.data import DATASETS, build_dataset
from twolayer.events import EVENTS
from twolayer.init import INITS
from twolayer.losses import LOSSES
from twolayer.nets import NETS
from twolayer.observe import OBSERVABLES, evaluate, output_dims
from twolayer.problem import OBJECTIVES
from twolayer.train import METHODS, Simulation

EXAMPLES = [  # small problems, one per family of datasets; the first that fits a metric is used
    {"data": {"kind": "two_points", "angle": 1.2, "labels": [1, -1]},
     "model": {"kind": "two_layer", "activation": "relu"}, "init": {"kind": "gaussian", "scale": 0.5}},
    {"data": {"kind": "toy2d"}, "model": {"kind": "two_layer", "activation": "relu"},
     "init": {"kind": "gaussian", "scale": 0.5}},
    {"data": {"kind": "symmetric_separable", "d": 3, "n": 8},
     "model": {"kind": "two_layer", "activation": {"name": "leaky_relu", "slope": 0.2}},
     "init": {"kind": "gaussian", "scale": 0.5}, "loss": {"kind": "logistic"}},
    {"data": {"kind": "symmetric_separable", "d": 3, "n": 8},
     "model": {"kind": "mean_field", "activation": "relu"}, "init": {"kind": "standard"}, "loss": {"kind": "logistic"}},
    {"data": {"kind": "toy2d"}, "model": {"kind": "mean_field", "activation": "relu"}, "init": {"kind": "standard"}},
    {"data": {"kind": "multi_index", "d": 6, "r": 2, "n": 40, "n_test": 20, "activation": "relu"},
     "model": {"kind": "two_layer", "activation": "relu"}, "init": {"kind": "standard"},
     "loss": {"kind": "square"}, "objective": "population"},
    {"data": {"kind": "multi_index", "d": 6, "r": 2, "n": 40, "n_test": 20},
     "model": {"kind": "mean_field", "activation": "abs"}, "init": {"kind": "standard"},
     "loss": {"kind": "square"}, "objective": "population"},
    {"data": {"kind": "multi_index", "d": 6, "r": 2, "n": 40, "n_test": 20},
     "model": {"kind": "mean_field", "activation": "abs"}, "init": {"kind": "standard"},
     "loss": {"kind": "square"}, "objective": "empirical"},
]


def problem_for(metrics: list[str], net: str, precision: str = "float64", seeds: int = 3):
    """A Simulation of the first example on ``net`` that accepts ``metrics``, or the reasons none did."""
    errors = []
    for example in EXAMPLES:
        if example["model"]["kind"] != net:
            continue
        cfg = {**example, "seeds": seeds, "model": {**example["model"], "width": 5}, "precision": precision,
               "train": {"method": "gd", "lr": 0.01, "steps": 1}, "observe": {"metrics": list(metrics)}}
        try:
            return Simulation(load_config(cfg))
        except (ConfigError, KeyError, ValueError) as e:
            errors.append(f"{example['data']['kind']}: {e}")
    return errors


# -- observables -------------------------------------------------------------------------------------

CASES = [(name, net) for name, obs in OBSERVABLES.items() for net in NETS.names() if obs.supports(net)]


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize(("name", "net"), CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_observable_conformance(name, net, precision):
    sim = problem_for([name], net, precision)
    if isinstance(sim, list):
        pytest.skip(f"{name} on {net}: no example problem provides its context ({'; '.join(sim)[:300]})")
    dtype = jnp.float32 if precision == "float32" else jnp.float64
    params = sim.initial_state().params
    fn = jax.jit(jax.vmap(lambda p, c: evaluate([name], p, c), in_axes=(0, None)))
    out = fn(params, sim.ctx)
    assert name in out, f"{name} must be one of its own outputs, got {sorted(out)}"
    for key, value in out.items():
        assert value.shape[0] == 3, (key, value.shape)
        if OBSERVABLES.get(name).per_neuron:
            assert value.shape[1:2] == (5,), (key, value.shape)
        if jnp.issubdtype(value.dtype, jnp.floating):
            assert value.dtype == dtype, (key, value.dtype)
        assert bool(jnp.all(jnp.isfinite(value))), key
        single = evaluate([name], jax.tree_util.tree_map(lambda x: x[1], params), sim.ctx)[key]
        np.testing.assert_allclose(np.asarray(value[1]), np.asarray(single),
                                   rtol=2e-4 if dtype == jnp.float32 else 1e-9, atol=1e-6 if dtype == jnp.float32 else 1e-12)


def test_every_observable_has_an_example_problem():
    missing = [(n, m) for n, m in CASES if isinstance(problem_for([n], m), list)]
    assert not missing, f"observables no example problem can evaluate: {missing}"


@pytest.mark.parametrize(("name", "net"), CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_observable_outputs_declare_their_axes(name, net):
    """Every output with axes beyond seed and time is labelled (``Run.to_xarray``): either its
    observable declares ``dims`` of matching rank, or it is one axis of length h (a per-neuron
    output, labelled ``neuron``)."""
    sim = problem_for([name], net)
    if isinstance(sim, list):
        pytest.skip("no example problem (test_every_observable_has_an_example_problem fails instead)")
    params = jax.tree_util.tree_map(lambda x: x[0], sim.initial_state().params)
    for key, value in evaluate([name], params, sim.ctx).items():
        declared = OBSERVABLES.get(name).dims.get(key)
        if declared is not None:
            assert len(declared) == value.ndim, (key, declared, value.shape)
            assert output_dims(key, value.ndim) == declared
        elif value.ndim:
            assert OBSERVABLES.get(name).per_neuron and value.shape == (5,), (
                f"{name}: output {key!r} has shape {value.shape}: declare its axes with observable(..., dims=...)")
            assert output_dims(key, 1) == ("neuron",)


# -- training methods ----------------------------------------------------------------------------------

LEAKY_SEPARABLE = {"data": {"kind": "symmetric_separable", "d": 3, "n": 8},
                   "model": {"kind": "two_layer", "activation": {"name": "leaky_relu", "slope": 0.2}, "width": 6},
                   "init": {"kind": "balanced", "scale": 0.1}, "loss": {"kind": "logistic", "reduction": "mean"}}
MULTI_INDEX = {"data": {"kind": "multi_index", "d": 6, "r": 2, "n": 40, "n_test": 20},
               "model": {"kind": "mean_field", "activation": "abs", "width": 8}, "init": {"kind": "standard"},
               "loss": {"kind": "square"}, "objective": "population"}
METHOD_EXAMPLES = {  # method -> (config sections, observed metrics); each run takes well under a second
    "gd": ({"train": {"method": "gd", "lr": 0.05, "steps": 300}}, ["loss", "w_norm"]),
    "sgd": ({"train": {"method": "sgd", "lr": 0.05, "steps": 300, "batch_size": 1}}, ["loss", "w_norm"]),
    "flow": ({"data": {"kind": "two_points", "angle": 1.4708, "labels": [1, 1]},
              "train": {"method": "flow", "time": 5.0}}, ["loss", "w_norm"]),
    "flow_log": ({**LEAKY_SEPARABLE, "train": {"method": "flow_log", "time": 4.0}}, ["loss", "w_norm"]),
    "flow_exact": ({"train": {"method": "flow_exact", "time": 5.0}}, ["loss", "w_norm"]),  # crosses hyperplanes
    "gd_paper": ({**MULTI_INDEX, "train": {"method": "gd_paper", "lr": 0.01, "steps": 60, "weight_decay": 0.1}},
                 ["loss", "mass_total"]),
    "online_sgd": ({"data": {"kind": "teacher_student", "d": 20, "n": 16}, "loss": {"kind": "square"},
                    "model": {"kind": "two_layer", "activation": "erf", "width": 3}, "init": {"kind": "standard"},
                    "train": {"method": "online_sgd", "lr": 0.05, "steps": 300, "batch_size": 2}}, ["loss", "w_norm"]),
}


def method_config(method: str, **sections) -> dict:
    example, metrics = METHOD_EXAMPLES[method]
    return base_config(**{**example, "observe": {"points": 8, "metrics": metrics}, **sections})


def test_every_method_has_an_example():
    assert set(METHOD_EXAMPLES) == set(METHODS.names()), "give each registered method an example above"


@pytest.mark.parametrize("method", list(METHOD_EXAMPLES))
def test_method_one_seed_alone_equals_the_same_seed_in_a_batch(out, method):
    """To round-off for discrete methods. Batches of any size give bitwise the same seed; but a single seed
    runs an unbatched program (``seed_map``), and an adaptive solver's step-size control turns its
    last-bit differences into differences of its own accuracy. So a flow agrees within 100 train.rtol in
    the observables and 1000 train.rtol in the final parameters: flow_log's example differs by 8.5e-8
    (loss) and 3.7e-6 (W) relative at rtol 1e-8, as it did before the method files were split."""
    batched = twolayer.run(method_config(method, seeds=[0, 3, 5]), out=out)
    alone = twolayer.run(method_config(method, seed=3), out=out)
    flow = METHODS.get(method).continuous
    rtol = 100 * alone.config["train"]["rtol"] if flow else 1e-10
    atol = rtol * 1e-3 if flow else 1e-14  # parameters that pass near zero
    for name in METHOD_EXAMPLES[method][1]:
        np.testing.assert_allclose(batched.trajectory[name][1], alone.trajectory[name], rtol=rtol, atol=atol)
    for key, value in alone.final_params.items():
        np.testing.assert_allclose(batched.final_params[key][1], value, rtol=10 * rtol if flow else rtol,
                                   atol=10 * atol if flow else atol)
    assert not np.allclose(batched.trajectory["loss"][0], batched.trajectory["loss"][2])  # the seeds do differ


@pytest.mark.parametrize("method", list(METHOD_EXAMPLES))
def test_method_float32_stays_float32(out, method):
    run = twolayer.run(method_config(method, seeds=2, precision="float32"), out=out)
    assert run.status == "completed", run.summary.get("message")
    for key, value in run.final_params.items():
        assert value.dtype == np.float32, (key, value.dtype)
    for key in METHOD_EXAMPLES[method][1]:
        assert run.trajectory[key].dtype == np.float32, (key, run.trajectory[key].dtype)


class Interrupt(KeyboardInterrupt):
    pass


@pytest.mark.parametrize("method", list(METHOD_EXAMPLES))
def test_method_resume_is_bitwise(tmp_path, method):
    cfg = method_config(method, seeds=2)
    reference = twolayer.run(cfg, out=tmp_path / "ref")

    def interrupt(state, done, total):
        if done == 4:
            raise Interrupt

    with pytest.raises(Interrupt):
        twolayer.api.run(cfg, out=tmp_path / "cut", checkpoint_seconds=0, _on_observation=interrupt)
    resumed = twolayer.run(cfg, out=tmp_path / "cut")
    assert resumed.summary["resumed_from"] == 4
    for name, value in reference.trajectory.items():
        np.testing.assert_array_equal(resumed.trajectory[name], value, err_msg=name)
    for key, value in reference.final_params.items():
        np.testing.assert_array_equal(resumed.final_params[key], value, err_msg=key)


@pytest.mark.parametrize("method", list(METHOD_EXAMPLES))
def test_method_time_axis(out, method):
    """t = lr k for discrete methods (GD, SGD: the same time axis as the flows); the observation times
    themselves for flows."""
    cfg = load_config(method_config(method, seed=0))
    run = twolayer.run(cfg, out=out)
    t, step = run.trajectory["t"], run.trajectory["step"]
    if METHODS.get(method).continuous:
        np.testing.assert_array_equal(step, 0)
        assert t[0] == 0 and t[-1] == cfg.train.time
    else:
        np.testing.assert_array_equal(t, step * cfg.train.lr)
        assert step[-1] == cfg.train.steps


# -- dataset kinds --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "data.npz"
    rng = np.random.default_rng(0)
    np.savez(path, X=rng.normal(size=(7, 3)), y=np.where(rng.random(7) < 0.5, -1.0, 1.0))
    return path


DATASET_EXTRAS = {"file": lambda path: {"path": str(path)}}  # required fields without a default


def test_every_dataset_kind_has_defaults_or_an_example():
    for kind, entry in DATASETS.items():
        required = [n for n, f in entry.params.model_fields.items() if f.is_required() and n != "kind"]
        assert not required or kind in DATASET_EXTRAS, f"data.kind {kind!r} needs an example for {required}"


@pytest.mark.parametrize("kind", DATASETS.names())
def test_dataset_kind_builds_from_its_defaults(kind, data_file):
    entry = DATASETS.get(kind)
    try:
        params = entry.params.model_validate({"kind": kind, **DATASET_EXTRAS.get(kind, lambda p: {})(data_file)})
        dataset = build_dataset(params)
    except (FileNotFoundError, ConfigError, ValueError) as e:
        if kind == "mnist_pair":
            pytest.skip(f"the MNIST files are not here: {e}")
        raise
    X, y = dataset.X, dataset.y
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert X.ndim == 2 and X.shape[0] >= 1 and X.shape[1] >= 1 and y.shape == (X.shape[0],)
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(y))
    for name, value in dataset.context.items():
        value = np.asarray(value)
        assert value.size and np.all(np.isfinite(value)), f"context array {name!r} of {kind}"


# -- initializations and objectives ---------------------------------------------------------------------

# parameters an init kind needs beyond its kind; None: it needs a file (covered by tests/test_init.py)
INIT_EXTRAS = {"file": None, "values": {"W": np.full((5, 3), 0.5).tolist(), "v": np.full(5, 0.5).tolist()}}


@pytest.mark.parametrize(("kind", "net"), [(k, n) for k, e in INITS.items() for n in NETS.names() if e.supports(n)])
def test_init_gives_finite_parameters(kind, net):
    if kind in INIT_EXTRAS and INIT_EXTRAS[kind] is None:
        pytest.skip("reads a file (tests/test_init.py)")
    params = INITS.get(kind).params.model_validate({"kind": kind, **INIT_EXTRAS.get(kind, {})})
    drawn = INITS.get(kind).fn(params, jax.random.PRNGKey(0), NETS.get(net), 5, 3)
    assert set(drawn) == set(NETS.get(net).param_names)
    for value in drawn.values():
        assert bool(jnp.all(jnp.isfinite(value))) and bool(jnp.any(value != 0))


OBJECTIVE_CASES = [(name, net) for name, o in OBJECTIVES.items() for net in NETS.names() if o.supports(net)]


@pytest.mark.parametrize(("name", "net"), OBJECTIVE_CASES, ids=[f"{n}-{m}" for n, m in OBJECTIVE_CASES])
def test_objective_value_and_gradient_are_finite(name, net):
    sims = [s for s in (_objective_problem(example, name, net) for example in EXAMPLES) if s is not None]
    if not sims:
        pytest.fail(f"objective {name!r} on {net}: no example problem accepts it")
    sim = sims[0]
    params = jax.tree_util.tree_map(lambda x: x[0], sim.initial_state().params)
    value, grads = jax.value_and_grad(sim.ctx.objective)(params)
    assert bool(jnp.isfinite(value))
    for key, g in grads.items():
        assert bool(jnp.all(jnp.isfinite(g))), key
    assert any(bool(jnp.any(g != 0)) for g in grads.values())


def _objective_problem(example, objective, net):
    if example["model"]["kind"] != net:
        return None
    cfg = {**example, "objective": objective, "seed": 0, "model": {**example["model"], "width": 5},
           "train": {"method": "gd", "lr": 0.01, "steps": 1}, "observe": {"metrics": ["loss"]}}
    try:
        return Simulation(load_config(cfg))
    except (ConfigError, KeyError, ValueError, NotImplementedError):
        return None


# -- events -------------------------------------------------------------------------------------------

# outputs that events read and the observables that record them (when the output is not itself a metric)
OUTPUT_OF = {"energy_4plus": "energies", "fit_pos": "subnet_fit", "fit_neg": "subnet_fit", "log_loss_sum": "log_loss"}


def observables_of(outputs) -> list[str]:
    metrics = [OUTPUT_OF.get(key, key) for key in outputs]
    unknown = [m for m in metrics if m not in OBSERVABLES]
    assert not unknown, f"outputs {unknown}: add the observable that records them to OUTPUT_OF"
    return list(dict.fromkeys(metrics))


@pytest.mark.parametrize("name", EVENTS.names())
def test_event_runs_on_a_synthetic_trajectory(name):
    """The detector gets a random trajectory (T = 30 points) of exactly the observables it needs, shaped
    as a run records them, and returns events that are floats or None."""
    detector = EVENTS.get(name)
    metrics = observables_of(detector.needs)
    sims = [s for net in NETS.names() if not isinstance(s := problem_for(metrics, net, seeds=1), list)]
    assert sims, f"event {name!r}: no example problem records {detector.needs}"
    sim = sims[0]
    spec = sim.record_spec()
    rng = np.random.default_rng(1)
    T = 30
    traj = {"t": np.linspace(0.0, 3.0, T)}
    for key in detector.needs:
        shape, dtype = spec[key]
        values = rng.random((T, *shape[1:]))
        traj[key] = np.sort(values, axis=0).astype(dtype) if np.issubdtype(dtype, np.floating) else \
            rng.integers(-1, 3, size=(T, *shape[1:])).astype(dtype)
    events = detector.fn(traj, sim.cfg)
    assert isinstance(events, dict) and events
    for key, value in events.items():
        assert value is None or np.isscalar(value) or np.ndim(value) == 0, (key, value)


# -- activations: the capabilities on their records -------------------------------------------------

ACTIVATION_EXAMPLES = {  # parameters beyond the defaults (each factory is also built from its defaults)
    "relu": [{"grad_at_zero": 0.5}],
    "leaky_relu": [{"slope": 0.0}, {"slope": 0.2}, {"slope": 1.0}],
}
ACTIVATION_CASES = [{"name": name, **params} for name in ACTIVATIONS.names()
                    for params in [{}, *ACTIVATION_EXAMPLES.get(name, [])]]
ACTIVATION_IDS = ["-".join(f"{k}={v}" if k != "name" else str(v) for k, v in case.items()) for case in ACTIVATION_CASES]


def test_every_activation_has_an_example():
    assert set(ACTIVATION_EXAMPLES) <= set(ACTIVATIONS.names()), "an example for an activation that is not registered"
    for case in ACTIVATION_CASES:
        make_activation(case)  # each factory builds from its defaults and from its examples


def _derivative_jumps(fn, points, h=1e-6):
    """|sigma'(c+) - sigma'(c-)| at each point c, by one-sided finite differences of step h (float64)."""
    c = jnp.asarray(points, jnp.float64)
    right = (fn(c + h) - fn(c)) / h
    left = (fn(c) - fn(c - h)) / h
    return np.abs(np.asarray(right - left))


@pytest.mark.parametrize("spec", ACTIVATION_CASES, ids=ACTIVATION_IDS)
def test_activation_kinks_are_where_its_derivative_jumps(spec):
    """``kinks`` lists exactly the points of [-3, 3] where sigma' jumps: on a grid that contains them, the one-sided
    difference quotients differ by more than 1e-3 there and by less than 1e-4 everywhere else."""
    act = make_activation(spec)
    grid = np.union1d(np.linspace(-3.0, 3.0, 241), np.asarray(act.kinks, dtype=np.float64))
    jumps = _derivative_jumps(act.fn, grid)
    declared = np.isin(grid, act.kinks)
    assert np.all(jumps[declared] > 1e-3), (grid[declared], jumps[declared])
    assert np.all(jumps[~declared] < 1e-4), (grid[~declared][jumps[~declared] >= 1e-4], jumps[~declared].max())


@pytest.mark.parametrize("spec", ACTIVATION_CASES, ids=ACTIVATION_IDS)
def test_activation_piecewise_linear_matches_its_function(spec):
    """A declared ``piecewise_linear`` Kink: sigma(z) = plus z for z > 0 and minus z for z < 0, jax.grad at exactly
    0 is at_zero, and ``kinks`` is (0,) unless the two slopes agree. Undeclared: sigma is not linear on both
    sides of 0 (a piecewise-linear activation must say so, or the event-driven methods refuse it)."""
    act = make_activation(spec)
    z = jnp.asarray(np.linspace(-4.0, 4.0, 161))
    values = np.asarray(act.fn(z))
    kink = act.piecewise_linear
    if kink is None:
        slope_pos, slope_neg = float(act.fn(1.0)), -float(act.fn(-1.0))
        linear_pieces = np.where(np.asarray(z) > 0, slope_pos * z, slope_neg * z)
        assert not np.allclose(values, linear_pieces, rtol=1e-12, atol=1e-12)
        return
    np.testing.assert_allclose(values, np.where(np.asarray(z) > 0, kink.plus * z, kink.minus * z), rtol=1e-15, atol=0)
    assert float(jax.grad(act.fn)(0.0)) == kink.at_zero
    grads = np.asarray(jax.vmap(jax.grad(act.fn))(z))
    np.testing.assert_array_equal(grads[np.asarray(z) > 0], kink.plus)
    np.testing.assert_array_equal(grads[np.asarray(z) < 0], kink.minus)
    assert act.kinks == (() if kink.smooth else (0.0,))


@pytest.mark.parametrize("spec", ACTIVATION_CASES, ids=ACTIVATION_IDS)
def test_activation_leaky_alpha_matches_its_values(spec):
    """``leaky_alpha``, where declared, is the alpha of sigma(z) = max(z, alpha z) (0 <= alpha <= 1): sigma(z) = alpha z
    for negative z and z for positive z. Where it is None, sigma is no such function (none is missed)."""
    act = make_activation(spec)
    z = np.linspace(-4.0, 4.0, 161)
    values = np.asarray(act.fn(jnp.asarray(z)))
    alpha = act.leaky_alpha
    if alpha is None:
        a = -float(act.fn(-1.0))
        assert not (0.0 <= a <= 1.0 and np.allclose(values, np.maximum(z, a * z), rtol=1e-12, atol=1e-12))
        return
    assert 0.0 <= alpha <= 1.0
    np.testing.assert_allclose(values[z < 0], alpha * z[z < 0], rtol=1e-15, atol=0)
    np.testing.assert_allclose(values, np.maximum(z, alpha * z), rtol=1e-15, atol=0)


# -- losses: the capabilities on their records ------------------------------------------------------


@pytest.mark.parametrize("name", LOSSES.names())
def test_loss_slope_at_zero_matches_a_finite_difference(name):
    """``slope_at_zero`` = -dl/dyhat at yhat = 0, y = 1: a central difference, and autodiff."""
    loss = LOSSES.get(name)
    y, h = jnp.ones(1), 1e-5
    fd = -(loss.per_sample(y, jnp.full(1, h)) - loss.per_sample(y, jnp.full(1, -h)))[0] / (2 * h)
    assert float(fd) == pytest.approx(loss.slope_at_zero, rel=1e-8)
    autodiff = -float(jax.grad(lambda f: loss.per_sample(y, f)[0])(jnp.zeros(1))[0])
    assert autodiff == pytest.approx(loss.slope_at_zero, rel=1e-14)


@pytest.mark.parametrize("name", LOSSES.names())
def test_loss_classification_flag_means_a_function_of_the_margin(name):
    """A ``classification`` loss (labels +-1) depends on y and yhat only through the margin y yhat, and only such a
    loss has a log form on the margin."""
    loss = LOSSES.get(name)
    if not loss.classification:
        assert loss.log_per_sample is None and loss.margin_of_log is None
        return
    f = jnp.linspace(-3.0, 3.0, 13)
    np.testing.assert_array_equal(loss.per_sample(jnp.ones_like(f), f), loss.per_sample(-jnp.ones_like(f), -f))


@pytest.mark.parametrize("name", LOSSES.names())
def test_loss_log_form_matches_the_log_of_the_loss(name):
    """``log_per_sample(q)`` = log l(q) where l is representable (q in [-30, 30]), and stays finite with a finite
    gradient far beyond (log l = -1e4, where l underflows); ``margin_of_log`` inverts it."""
    loss = LOSSES.get(name)
    if loss.log_per_sample is None:
        assert loss.margin_of_log is None, "margin_of_log inverts log_per_sample: give both"
        return
    q = jnp.linspace(-30.0, 30.0, 121)
    np.testing.assert_allclose(loss.log_per_sample(q), jnp.log(loss.per_sample(jnp.ones_like(q), q)), rtol=1e-12)
    far = jnp.asarray([100.0, 1e3, 1e4])
    assert np.all(np.isfinite(loss.log_per_sample(far)))
    assert np.all(np.isfinite(jax.vmap(jax.grad(loss.log_per_sample))(far)))
    if loss.margin_of_log is not None:
        back = jnp.concatenate([jnp.linspace(-5.0, 40.0, 91), far])
        np.testing.assert_allclose(loss.margin_of_log(loss.log_per_sample(back)), back, rtol=1e-12, atol=1e-12)
