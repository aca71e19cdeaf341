"""Hyperplane groups without pairwise loops, and the one-sided velocities of large data in O(n h) memory
(``kinks.parallel_reps``, ``kinks.one_sided_velocities`` past ``kinks.DENSE_GROUPS``)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from twolayer.activations import make_activation
from twolayer.losses import LOSSES
from twolayer.nets import NETS
from twolayer.problem import Problem
from twolayer.train import kinks
from twolayer.train.event_flow import plain_out_grad


def pairwise_groups(X):
    """The definition: rep[k] is the first representative i < k with |cos(x_i, x_k)| >= 1 - PARALLEL_TOL."""
    norms = np.linalg.norm(X, axis=1)
    n = len(X)
    rep, orient = np.full(n, -1, dtype=np.int32), np.zeros(n)
    for k in range(n):
        if norms[k] == 0:
            continue
        rep[k], orient[k] = k, 1.0
        for i in range(k):
            if rep[i] == i and abs(X[i] @ X[k] / (norms[i] * norms[k])) >= 1 - kinks.PARALLEL_TOL:
                rep[k], orient[k] = i, np.sign(X[i] @ X[k])
                break
    return rep, orient


def datasets():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    X[5], X[7], X[9], X[12] = -2 * X[1], 3 * X[1], 0.0, 0.5 * X[3]
    yield "parallel triples and a zero point", X
    X = rng.normal(size=(20, 2))
    yield "symmetric", np.concatenate([X, -X])
    yield "axes", np.concatenate([np.eye(4), -np.eye(4), 2 * np.eye(4), np.zeros((2, 4))])
    yield "integer grid (many parallel)", rng.integers(-2, 3, size=(200, 2)).astype(float)
    X = rng.normal(size=(50, 5))
    X[10] = X[3] * (1 + 1e-9)  # parallel to rounding, not exactly a multiple
    X[11] = X[4] + 1e-4 * rng.normal(size=5)  # close, not parallel
    yield "near-parallel", X


@pytest.mark.parametrize(("name", "X"), list(datasets()))
def test_groups_are_the_pairwise_definition(name, X):
    rep, orient = pairwise_groups(X)
    groups = kinks.hyperplane_groups(X)
    np.testing.assert_array_equal(groups["rep"], rep)
    np.testing.assert_array_equal(groups["orient"], orient)
    valid = rep >= 0
    members = np.zeros((len(X), len(X)))
    norms = np.linalg.norm(X, axis=1)
    members[rep[valid], np.flatnonzero(valid)] = orient[valid] * norms[valid] / norms[rep[valid]]
    assert groups["members"].tobytes() == members.tobytes()
    scaled = groups["scale"][:, None] * X[np.maximum(rep, 0)]
    np.testing.assert_allclose(scaled[valid], X[valid], rtol=1e-12, atol=1e-15)


def test_large_data_skip_the_dense_members():
    X = np.random.default_rng(1).normal(size=(kinks.DENSE_GROUPS + 1, 3))
    groups = kinks.hyperplane_groups(X)
    assert groups["members"] is None and groups["scale"].shape == (len(X),)


def velocities(X, W, v, y, modes, slots, activation, large, weight_decay=0.05):
    groups = kinks.hyperplane_groups(X)
    n = len(X)
    members = np.zeros((0, n)) if large else groups["members"]
    act = make_activation(activation)
    problem = Problem(NETS.get("two_layer"), act, LOSSES.get("logistic"), "mean")
    arrays = (jnp.asarray(groups["rep"]), jnp.asarray(groups["orient"]), jnp.asarray(members),
              jnp.asarray(groups["scale"]))
    zp, zm = kinks.one_sided_velocities(jnp.asarray(W), jnp.asarray(v), jnp.asarray(X), jnp.asarray(modes),
                                        jnp.asarray(slots), arrays, kinks.kink_of(act),
                                        plain_out_grad(problem, jnp.asarray(y)), 0.0, weight_decay=weight_decay)
    return np.asarray(zp), np.asarray(zm), groups["rep"]


@pytest.mark.parametrize("activation", ["relu", {"name": "leaky_relu", "slope": 0.2}])
def test_large_form_equals_the_gram_form(activation):
    rng = np.random.default_rng(2)
    n, d, h = 40, 4, 5
    X = rng.normal(size=(n, d))
    X[7], X[20] = -2.0 * X[1], 0.5 * X[1]  # a group of three
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    W, v = rng.normal(size=(h, d)), rng.normal(size=h)
    modes = np.where(rng.random((n, h)) < 0.5, -1, 1).astype(np.int8)
    modes[2, 0], modes[5, 0], modes[9, 3] = 0, 0, 0  # slides: two on neuron 0, one on neuron 3
    slots = np.full((h, 2), -1, dtype=np.int32)
    slots[0], slots[3, 0] = [2, 5], 9
    dense = velocities(X, W, v, y, modes, slots, activation, large=False)
    large = velocities(X, W, v, y, modes, slots, activation, large=True)
    reps = dense[2] == np.arange(n)
    for a, b in zip(dense[:2], large[:2]):
        np.testing.assert_allclose(b[reps], a[reps], rtol=1e-10, atol=1e-12)
        assert np.abs(a[reps]).max() > 1e-2


def test_large_form_keeps_a_structurally_tangent_side_exactly_zero():
    """A ReLU neuron with no active point outside group i: the inactive side's field at x_i is exactly 0."""
    rng = np.random.default_rng(3)
    n, d, h = 12, 3, 2
    X = rng.normal(size=(n, d))
    y = np.ones(n)
    W, v = rng.normal(size=(h, d)), rng.normal(size=h)
    modes = -np.ones((n, h), dtype=np.int8)
    modes[4, 0] = 1  # neuron 0: only point 4 active
    slots = np.full((h, 2), -1, dtype=np.int32)
    for large in (False, True):
        zp, zm, _ = velocities(X, W, v, y, modes, slots, "relu", large=large, weight_decay=0.0)
        assert zm[4, 0] == 0.0 and zp[4, 0] != 0.0
