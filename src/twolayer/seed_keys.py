"""The raw PRNG keys of integer seeds, computed on the host.

A run derives two keys from each seed s: ``jax.random.PRNGKey(s)`` (the training key) and
``fold_in(PRNGKey(s), 1)`` (the init key). Eagerly, each is a dispatch of a small XLA program per seed
(~0.3-0.7 ms), which a run of hundreds of seeds, or a claim that re-draws a run's initialization, pays in
seconds. Here they are the Threefry-2x32 hash (Salmon et al. 2011, "Parallel random numbers: as easy as
1, 2, 3", Threefry-2x32 with 20 rounds; JAX's default ``threefry2x32`` implementation) evaluated by numpy
on every seed at once: unsigned 32-bit integer arithmetic, so the keys are bitwise JAX's
(``tests/test_seed_keys.py`` compares them), with no XLA program and no per-seed dispatch.
"""

from __future__ import annotations

import jax
import numpy as np

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
PARITY = np.uint32(0x1BD11BDA)  # Threefry's key-schedule constant


def threefry2x32(k1, k2, x1, x2) -> tuple[np.ndarray, np.ndarray]:
    """The Threefry-2x32 hash (20 rounds, key injection every 4) of the counter words (x1, x2) under the key
    (k1, k2); uint32 arrays that broadcast. As jax's ``threefry2x32_p``: x += k; five times: four rounds
    x0 += x1, x1 = rotl(x1, r) ^ x0, then the next key words and the injection count are added."""
    k1, k2, x1, x2 = np.broadcast_arrays(*(np.asarray(a, dtype=np.uint32) for a in (k1, k2, x1, x2)))
    ks = (k1, k2, k1 ^ k2 ^ PARITY)
    with np.errstate(over="ignore"):  # the sums are modulo 2^32
        x0, x1 = x1 + ks[0], x2 + ks[1]
        for i in range(5):
            for r in ROTATIONS[i % 2]:
                x0 = x0 + x1
                x1 = ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))) ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def _words(values) -> tuple[np.ndarray, np.ndarray]:
    """The high and low 32-bit words of 64-bit integers (jax's ``threefry_seed``)."""
    v = np.asarray(values, dtype=np.int64).view(np.uint64)
    return (v >> np.uint64(32)).astype(np.uint32), (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def _is_threefry() -> bool:
    return str(jax.config.jax_default_prng_impl) == "threefry2x32"


def prng_keys(seeds) -> np.ndarray:
    """[S, 2] uint32: ``jax.random.PRNGKey(s)`` of every seed s (integers 0 <= s < 2^63): its two 32-bit words."""
    seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
    if not _is_threefry():
        return np.stack([np.asarray(jax.random.PRNGKey(int(s))) for s in seeds]).reshape(len(seeds), -1)
    return np.stack(_words(seeds), axis=-1)


def fold_in(keys, data: int) -> np.ndarray:
    """[S, 2] uint32: ``jax.random.fold_in(key, data)`` of every raw key [S, 2] (data a 32-bit integer): the hash
    of the counter (0, data) under the key."""
    keys = np.asarray(keys, dtype=np.uint32)
    if not _is_threefry():
        return np.stack([np.asarray(jax.random.fold_in(k, data)) for k in keys])
    hi, lo = threefry2x32(keys[:, 0], keys[:, 1], np.uint32(0), np.uint32(data))
    return np.stack([hi, lo], axis=-1)
