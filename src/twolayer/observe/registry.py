"""The observable registry: pure functions ``(params, ctx) -> {name: array}`` registered by name.

They run inside the compiled loop at observation times, vmapped over seeds. Adding a diagnostic is
adding one decorated function; ``nets`` restricts it to the architectures where it is defined, and
``needs`` names the context arrays it reads beyond ``X`` and ``y``; ``dims`` names the axes of
each output beyond the seed and time axes (``per_neuron`` outputs default to ``("neuron",)``;
see ``output_dims``), so trajectories can be labelled (``Run.to_xarray``). A context array is computed
once per run, outside the loop, by the provider registered under its name in ``CONTEXT``
(``twolayer.problem.context_array``: ``@context_array("x_pos")`` on ``fn(dataset, cfg) -> array``), so X-dependent constants are
never recomputed per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax.numpy as jnp

from twolayer.problem import CONTEXT
from twolayer.registry import Entry, Registry


@dataclass(frozen=True, kw_only=True)
class Observable(Entry):
    """A registered observable: ``fn(params, ctx) -> {name: array}`` (``Entry``'s fields), plus
    ``per_neuron`` (one value per neuron) and ``dims`` (output name -> axis names, from ``AXES``)."""

    per_neuron: bool = False
    dims: dict[str, tuple[str, ...]] = field(default_factory=dict)


# Axis names of observable outputs (beyond seed and time): ``neuron`` j < h, ``sample`` i < n
# (training points), ``input`` k < d (coordinates of x), ``direction`` j < r (target directions),
# ``order`` (Hermite order k), ``plane`` (the two coordinates in a reference plane), ``reference``
# (the reference directions spanning that plane); ``neuron2`` and ``direction2`` the second axis of an
# overlap matrix (student-student Q, teacher-teacher T: ``observe/order_parameters.py``).
AXES = ("neuron", "sample", "input", "direction", "order", "plane", "reference", "neuron2", "direction2")

OBSERVABLES: Registry[Observable] = Registry("observe.metrics")


def context_arrays(metrics, dataset, cfg) -> dict:
    """The context arrays the given metrics need (dataset-provided ones win over providers). A provider
    that refuses this config (a ``ValueError``: no multi-index target on two_points data) is reported
    as ``observe.metrics: '<metric>' cannot be observed here: <why>``."""
    out = {}
    for metric in metrics:
        for name in OBSERVABLES.get(metric).needs:
            if name in out:
                continue
            try:
                out[name] = dataset.context[name] if name in dataset.context else CONTEXT.get(name)(dataset, cfg)
            except ValueError as e:
                why = str(e).removeprefix("observe.metrics:").strip()
                raise ValueError(f"observe.metrics: {metric!r} cannot be observed here: {why}") from None
    return out


def observable(name: str, *, nets: tuple[str, ...] = (), per_neuron: bool = False, needs: tuple[str, ...] = (),
               dims: tuple[str, ...] | dict[str, tuple[str, ...]] = ()):
    """Register ``fn(params, ctx) -> array`` (or a dict of arrays) as the observable ``name``.

    ``dims``: the axis names (from ``AXES``) of the output ``name`` as a tuple, or of several
    outputs as ``{output: axes}``; outputs of ``per_neuron`` observables default to ``("neuron",)``."""
    dims = {name: tuple(dims)} if isinstance(dims, tuple | list) and dims else dict(dims or {})
    unknown = {a for axes in dims.values() for a in axes} - set(AXES)
    if unknown:
        raise ValueError(f"observable {name!r}: unknown axis name(s) {sorted(unknown)} (one of {', '.join(AXES)})")

    def decorator(fn):
        def wrapped(params, ctx):
            out = fn(params, ctx)
            return out if isinstance(out, dict) else {name: out}

        OBSERVABLES.register(name, Observable(name=name, fn=wrapped, doc=(fn.__doc__ or "").strip(), needs=tuple(needs),
                                              nets=tuple(nets), per_neuron=per_neuron,
                                              dims={k: tuple(v) for k, v in dims.items()}))
        return fn

    return decorator


def output_dims(key: str, rank: int) -> tuple[str, ...] | None:
    """The axis names of a recorded output ``key`` whose values have ``rank`` axes beyond seed and
    time: the ``dims`` an observable declares for it; else ``()`` for a scalar and ``("neuron",)``
    for one axis (the outputs of per-neuron observables; the observable conformance test checks
    that every other output with axes declares them); ``None`` when undeclared with rank > 1."""
    for _, obs in OBSERVABLES.items():
        if key in obs.dims:
            return obs.dims[key]
    return {0: (), 1: ("neuron",)}.get(rank)


def evaluate(names, params, ctx) -> dict:
    """Evaluate the named observables on one parameter set (no seed axis)."""
    out: dict = {}
    for name in names:
        out.update(OBSERVABLES.get(name).fn(params, ctx))
    return {k: jnp.asarray(v) for k, v in out.items()}
