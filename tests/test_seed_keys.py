"""The host-side Threefry keys are bitwise JAX's (twolayer.seed_keys)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from twolayer import seed_keys

RNG = np.random.default_rng(7)
SEEDS = np.concatenate([np.arange(40), RNG.integers(0, 2**63 - 1, 40, dtype=np.int64),
                        [2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**63 - 1]])


def jax_keys(seeds):
    return np.stack([np.asarray(jax.random.PRNGKey(int(s))) for s in seeds])


def test_prng_keys_are_jaxs_for_small_and_64_bit_seeds():
    keys = seed_keys.prng_keys(SEEDS)
    assert keys.dtype == np.uint32 and keys.shape == (len(SEEDS), 2)
    np.testing.assert_array_equal(keys, jax_keys(SEEDS))


@pytest.mark.parametrize("data", [0, 1, 29, 2**31, 2**32 - 1])
def test_fold_in_is_jaxs(data):
    keys = jax_keys(SEEDS)
    expected = np.stack([np.asarray(jax.random.fold_in(k, data)) for k in keys])
    np.testing.assert_array_equal(seed_keys.fold_in(keys, data), expected)


def test_the_hash_is_the_published_threefry_2x32_20():
    """Random123's known-answer vectors for Threefry-2x32 with 20 rounds (kat_vectors: threefry2x32_20)."""
    zero = seed_keys.threefry2x32(0, 0, 0, 0)
    assert [hex(int(w)) for w in zero] == ["0x6b200159", "0x99ba4efe"]
    ones = seed_keys.threefry2x32(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
    assert [hex(int(w)) for w in ones] == ["0x1cb996fc", "0xbb002be7"]
    pi = seed_keys.threefry2x32(0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3)
    assert [hex(int(w)) for w in pi] == ["0xc4923a9c", "0x483df7a0"]


def test_without_threefry_the_keys_come_from_jax(monkeypatch):
    """Another PRNG implementation configured in JAX: the keys are drawn by JAX itself, seed by seed."""
    monkeypatch.setattr(seed_keys, "_is_threefry", lambda: False)
    np.testing.assert_array_equal(seed_keys.prng_keys(SEEDS[:5]), jax_keys(SEEDS[:5]))
    keys = jax_keys(SEEDS[:5])
    np.testing.assert_array_equal(seed_keys.fold_in(keys, 1),
                                  np.stack([np.asarray(jax.random.fold_in(k, 1)) for k in keys]))


def test_a_run_draws_its_initialization_from_these_keys():
    """The init key of seed s is fold_in(PRNGKey(s), 1): a run's first W is the init's draw under jax's own key."""
    from twolayer.config import load_config
    from twolayer.init import INITS
    from twolayer.train import Simulation

    cfg = load_config({"name": "k", "data": {"kind": "two_points", "angle": 1.0, "labels": [1, -1]},
                       "model": {"kind": "two_layer", "activation": "relu", "width": 3},
                       "init": {"kind": "gaussian", "scale": 0.5}, "train": {"method": "gd", "lr": 0.1, "steps": 2},
                       "seeds": [3, 2**40]})
    sim = Simulation(cfg)
    W = np.asarray(sim.initial_state().params["W"])
    for row, s in zip(W, [3, 2**40]):
        key = jax.random.fold_in(jax.random.PRNGKey(s), 1)
        one = INITS.get("gaussian").fn(cfg.init, key, sim.problem.net, 3, 2)
        np.testing.assert_array_equal(row, np.asarray(one["W"]))
    np.testing.assert_array_equal(np.asarray(sim.keys), jax_keys([3, 2**40]))
