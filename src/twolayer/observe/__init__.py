"""Observables: pure functions ``(params, ctx) -> {name: array}`` registered by name.

They run inside the compiled loop at observation times, vmapped over seeds. Adding a diagnostic is
adding one decorated function; ``nets`` restricts it to the architectures where it is defined, and
``needs`` names the context arrays it reads beyond ``X`` and ``y``. A context array is computed
once per run, outside the loop, by the provider registered under its name in ``CONTEXT``
(``@context_array("x_pos")`` on ``fn(dataset, cfg) -> array``), so X-dependent constants are
never recomputed per step.
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
    needs: tuple[str, ...] = ()


OBSERVABLES: Registry[Observable] = Registry("observe.metrics")
CONTEXT: Registry[Callable] = Registry("context array")


def context_array(name: str):
    """Register ``fn(dataset, cfg) -> array`` as the provider of the context array ``name``."""
    return CONTEXT.register(name)


def context_arrays(metrics, dataset, cfg) -> dict:
    """The context arrays the given metrics need (dataset-provided ones win over providers)."""
    out = {}
    for metric in metrics:
        for name in OBSERVABLES.get(metric).needs:
            if name not in out:
                out[name] = dataset.context[name] if name in dataset.context else CONTEXT.get(name)(dataset, cfg)
    return out


def observable(name: str, *, nets: tuple[str, ...] = (), per_neuron: bool = False, needs: tuple[str, ...] = ()):
    """Register ``fn(params, ctx) -> array`` (or a dict of arrays) as the observable ``name``."""

    def decorator(fn):
        def wrapped(params, ctx):
            out = fn(params, ctx)
            return out if isinstance(out, dict) else {name: out}

        OBSERVABLES.register(name, Observable(name, wrapped, tuple(nets), per_neuron, (fn.__doc__ or "").strip(),
                                              tuple(needs)))
        return fn

    return decorator


def evaluate(names, params, ctx) -> dict:
    """Evaluate the named observables on one parameter set (no seed axis)."""
    out: dict = {}
    for name in names:
        out.update(OBSERVABLES.get(name).fn(params, ctx))
    return {k: jnp.asarray(v) for k, v in out.items()}


from twolayer.observe import basic  # noqa: E402,F401  (registers the built-in observables)
from twolayer.observe import multi_index  # noqa: E402,F401  (multi-index paper observables)
from twolayer.observe import alignment  # noqa: E402,F401  (Min et al. 2024: cones, alignment, spectra, events)
from twolayer.observe import margin  # noqa: E402,F401  (margin diagnostics, Lyu et al. 2021)
