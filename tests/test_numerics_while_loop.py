"""``numerics.while_loop``: lax.while_loop's values, batched under vmap in one fixpoint pass."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from twolayer.numerics import while_loop

STOP = 5


def shifting(loop):
    """A loop whose carry becomes batched one entry per pass: a (batched by the input) feeds b, b feeds c, c feeds
    d; the predicate reads a, so it is batched from the start."""

    def run(x):
        def body(c):
            a, b, cc, d, k = c
            return a * 0.5 + 1.0, a + b, b * 2.0 - cc, cc + d, k + 1

        return loop(lambda c: (c[4] < STOP) & (c[0] < 100.0), body, (x, 0.0, 1.0, 2.0, jnp.int32(0)))

    return run


def test_values_equal_lax_with_and_without_vmap():
    xs = jnp.array([0.1, 3.0, 250.0])  # the last seed stops at once: per-seed trip counts
    for wrap in (jax.vmap, lambda f: jax.vmap(jax.jit(f))):
        ours, theirs = wrap(shifting(while_loop))(xs), wrap(shifting(lax.while_loop))(xs)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for x in xs:
        for a, b in zip(shifting(while_loop)(x), shifting(lax.while_loop)(x)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_unbatched_predicate_leaves_the_carry_unbatched():
    """A predicate that does not depend on the seed keeps the unbatched entries of the carry unbatched (here the
    counter), as lax.while_loop does: the output of vmap then has no seed axis on them after out_axes=None."""

    def run(x):
        return while_loop(lambda c: c[1] < STOP, lambda c: (c[0] * 2.0, c[1] + 1), (x, jnp.int32(0)))

    out, count = jax.vmap(run, out_axes=(0, None))(jnp.array([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(out), [32.0, 64.0])
    assert int(count) == STOP


def test_vmap_batches_the_body_in_fewer_passes(monkeypatch):
    """The point of the helper: vmap's fixpoint batches the body once more for each carry entry that turns batched
    (five passes here with lax.while_loop), the helper's loop in two (one fixpoint pass and the final one).
    Counted at JAX's batch_jaxpr (an internal: skipped if it moves)."""
    batching = pytest.importorskip("jax._src.interpreters.batching")
    if not hasattr(batching, "batch_jaxpr"):
        pytest.skip("jax moved batch_jaxpr")
    calls = []
    real = batching.batch_jaxpr

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(batching, "batch_jaxpr", counting)
    xs = jnp.array([0.1, 3.0])
    jax.make_jaxpr(jax.vmap(shifting(lax.while_loop)))(xs)
    plain = len(calls)
    calls.clear()
    jax.make_jaxpr(jax.vmap(shifting(while_loop)))(xs)
    assert plain >= 4 and len(calls) <= 2, (plain, len(calls))
