"""Conformance: every registered observable runs under jit and vmap over seeds, in float32 and
float64, with stable shapes, its dtype and finite values, for every architecture it supports.

Observables that read context arrays (``needs``) get them the way a run does: each case is run on
the first example problem below whose config validates with that metric and whose context the
registered providers can build, so no observable is left out.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from twolayer.config import ConfigError, load_config
from twolayer.nets import NETS
from twolayer.observe import OBSERVABLES, evaluate
from twolayer.train import Simulation

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

CASES = [(name, net) for name, obs in OBSERVABLES.items() for net in NETS.names() if not obs.nets or net in obs.nets]


def problem_for(name: str, net: str, precision: str):
    """A Simulation of the first example that accepts metric ``name`` on ``net``."""
    errors = []
    for example in EXAMPLES:
        if example["model"]["kind"] != net:
            continue
        cfg = {**example, "seeds": 3, "model": {**example["model"], "width": 5}, "precision": precision,
               "train": {"method": "gd", "lr": 0.01, "steps": 1}, "observe": {"metrics": [name]}}
        try:
            return Simulation(load_config(cfg))
        except (ConfigError, KeyError, ValueError) as e:
            errors.append(f"{example['data']['kind']}: {e}")
    return errors


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize(("name", "net"), CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_observable_conformance(name, net, precision):
    sim = problem_for(name, net, precision)
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
    missing = [(n, m) for n, m in CASES if isinstance(problem_for(n, m, "float64"), list)]
    assert not missing, f"observables no example problem can evaluate: {missing}"


def test_registry_covers_issue_metrics():
    for name in ("loss", "accuracy", "w_norm", "v", "imbalance", "param_norm_sq"):
        assert name in OBSERVABLES


@pytest.mark.parametrize(("name", "net"), CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_observable_outputs_declare_their_axes(name, net):
    """Every output with axes beyond seed and time is labelled (``Run.to_xarray``): either its
    observable declares ``dims`` of matching rank, or it is one axis of length h (a per-neuron
    output, labelled ``neuron``)."""
    from twolayer.observe import output_dims

    sim = problem_for(name, net, "float64")
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
