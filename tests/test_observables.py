"""Conformance: every registered observable runs under jit and vmap over seeds, in float32 and
float64, with stable shapes and finite values, for every architecture it supports."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from twolayer.activations import make_activation
from twolayer.losses import LOSSES
from twolayer.nets import NETS
from twolayer.observe import OBSERVABLES, evaluate
from twolayer.problem import Problem, make_context

CASES = [(name, net) for name, obs in OBSERVABLES.items() for net in NETS.names() if not obs.nets or net in obs.nets]


def batched_params(net, dtype, seeds=3, h=5, d=4):
    key = jax.random.PRNGKey(0)
    params = {"W": jax.random.normal(key, (seeds, h, d), dtype=dtype)}
    if net == "two_layer":
        params["v"] = jax.random.normal(jax.random.fold_in(key, 1), (seeds, h), dtype=dtype)
    return params


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize(("name", "net"), CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_observable_conformance(name, net, dtype):
    rng = np.random.default_rng(0)
    problem = Problem(NETS.get(net), make_activation("relu"), LOSSES.get("logistic"), "mean")
    ctx = make_context(problem, {"X": rng.normal(size=(9, 4)), "y": np.sign(rng.normal(size=9))}, dtype)
    params = batched_params(net, dtype)
    fn = jax.jit(jax.vmap(lambda p, c: evaluate([name], p, c), in_axes=(0, None)))
    out = fn(params, ctx)
    assert name in out
    for key, value in out.items():
        assert value.shape[0] == 3, (key, value.shape)
        if OBSERVABLES.get(name).per_neuron:
            assert value.shape[1:] == (5,), (key, value.shape)
        if jnp.issubdtype(value.dtype, jnp.floating):
            assert value.dtype == dtype, (key, value.dtype)
        assert bool(jnp.all(jnp.isfinite(value))), key
        single = evaluate([name], jax.tree_util.tree_map(lambda x: x[1], params), ctx)[key]
        np.testing.assert_allclose(np.asarray(value[1]), np.asarray(single), rtol=1e-5 if dtype == jnp.float32 else 1e-12)


def test_registry_covers_issue_metrics():
    for name in ("loss", "accuracy", "w_norm", "v", "imbalance", "param_norm_sq"):
        assert name in OBSERVABLES
