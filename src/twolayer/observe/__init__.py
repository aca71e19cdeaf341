"""Observables: pure functions ``(params, ctx) -> {name: array}`` registered by name.

They run inside the compiled loop at observation times, vmapped over seeds. Adding a diagnostic is
adding one decorated function; ``nets`` restricts it to the architectures where it is defined.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp

from twolayer.registry import Registry


@dataclass(frozen=True)
class Observable:
    name: str
    fn: Callable  # (params, ctx) -> {name: array}
    nets: tuple[str, ...] = ()  # empty: every architecture
    per_neuron: bool = False
    doc: str = ""


OBSERVABLES: Registry[Observable] = Registry("observe.metrics")


def observable(name: str, *, nets: tuple[str, ...] = (), per_neuron: bool = False):
    """Register ``fn(params, ctx) -> array`` (or a dict of arrays) as the observable ``name``."""

    def decorator(fn):
        def wrapped(params, ctx):
            out = fn(params, ctx)
            return out if isinstance(out, dict) else {name: out}

        OBSERVABLES.register(name, Observable(name, wrapped, tuple(nets), per_neuron, (fn.__doc__ or "").strip()))
        return fn

    return decorator


def evaluate(names, params, ctx) -> dict:
    """Evaluate the named observables on one parameter set (no seed axis)."""
    out: dict = {}
    for name in names:
        out.update(OBSERVABLES.get(name).fn(params, ctx))
    return {k: jnp.asarray(v) for k, v in out.items()}


from twolayer.observe import basic  # noqa: E402,F401  (registers the built-in observables)
