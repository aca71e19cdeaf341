"""Initializations: a registry of kinds, each with validated parameters and a sampler.

A sampler maps ``(params, key, net, width, d)`` to a parameter pytree of one seed;
``sample_seeds`` stacks the seeds (on the host, so no XLA program is compiled per seed count).
``file`` reads fixed parameters (optionally one set per seed).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import ConfigDict, Field, field_validator, model_serializer

from twolayer.fields import FileRef, StrictNumbers
from twolayer.fileio import read_npz
from twolayer.nets import Net
from twolayer.registry import Entry, Registry


class InitParams(StrictNumbers):
    """Base class of every initialization's parameters (strict, frozen)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    given: ClassVar[bool] = False  # True: the arrays are given (``fixed``), not drawn from the seed's key
    kind: str

    def fixed(self) -> dict[str, np.ndarray] | None:
        """The arrays of an initialization that is given rather than drawn (``file``, ``values``), else None."""
        return None

    def field_of(self, array: str) -> str:
        """The config field that holds the given array ``W`` or ``v`` (the one its errors name)."""
        return "init"


@dataclass(frozen=True, kw_only=True)
class InitKind(Entry):
    """A registered initialization: ``fn(params, key, net, width, d) -> {"W": [h, d], "v": [h]}`` (one seed;
    ``net`` a ``twolayer.nets.Net``, whose ``param_names`` say which arrays to draw), and the
    validated parameter model ``params``."""

    params: type[InitParams]


INITS: Registry[InitKind] = Registry("init.kind")


def register_init(name: str, params: type[InitParams], nets=()):
    """Decorator: register ``fn(params, key, net, width, d)`` as the init ``name`` (``nets``: the
    architectures it applies to; empty: every one)."""
    def decorator(fn):
        INITS.register(name, InitKind(name=name, fn=fn, doc=(fn.__doc__ or params.__doc__ or "").strip(),
                                      nets=tuple(nets), params=params))
        return fn

    return decorator


class GaussianParams(InitParams):
    """Every entry i.i.d. N(0, scale^2) (Min et al. §4: scale = 1e-6)."""

    kind: Literal["gaussian"] = "gaussian"
    scale: float = Field(default=1e-6, gt=0)


@register_init("gaussian", GaussianParams)
def gaussian(p: GaussianParams, key, net: Net, width: int, d: int):
    """Every entry of W (and v, for nets that have it) i.i.d. N(0, scale^2)."""
    kW, kv = jax.random.split(key)
    params = {"W": p.scale * jax.random.normal(kW, (width, d))}
    if "v" in net.param_names:
        params["v"] = p.scale * jax.random.normal(kv, (width,))
    return params


class BalancedParams(InitParams):
    """W = scale * W0 with W0 ~ N(0, 1/d) entries, v_j = s_j ||w_j|| (Min et al. eq. 3).

    ``signs`` is ``random`` (i.i.d. +-1 with probability 1/2) or a list of +-1 of length width.
    """

    kind: Literal["balanced"] = "balanced"
    scale: float = Field(default=1e-6, gt=0)
    signs: Literal["random"] | list[Literal[-1, 1]] = "random"


@register_init("balanced", BalancedParams, nets=("two_layer",))
def balanced(p: BalancedParams, key, net: Net, width: int, d: int):
    """W = scale W0 with W0 ~ N(0, 1/d) entries, v_j = s_j ||w_j|| (Min et al. eq. 3): v_j^2 = ||w_j||^2."""
    kW, ks = jax.random.split(key)
    W = p.scale * jax.random.normal(kW, (width, d)) / np.sqrt(d)
    if p.signs == "random":
        signs = jnp.where(jax.random.bernoulli(ks, 0.5, (width,)), 1.0, -1.0)
    else:
        if len(p.signs) != width:
            raise ValueError(f"init.signs: has {len(p.signs)} entries, model.width is {width}")
        signs = jnp.asarray(p.signs, dtype=W.dtype)
    return {"W": W, "v": signs * jnp.linalg.norm(W, axis=1)}


class StandardParams(InitParams):
    """Rows w_j ~ N(0, scale^2 I/d); for two_layer also v_j ~ N(0, scale^2 / width). ``support`` k draws the
    rows on the first k coordinates only, w_j ~ N(0, scale^2 I_k/k) there and 0 elsewhere (the same norms:
    e.g. an initialization inside a multi-index target's subspace, whose basis is e_1..e_r by default)."""

    kind: Literal["standard"] = "standard"
    scale: float = Field(default=1.0, gt=0)
    support: int | None = Field(default=None, ge=1)

    @model_serializer(mode="wrap")
    def _drop_default_support(self, handler):
        """Leave ``support`` out of the resolved config while unset, so existing run hashes are kept."""
        out = handler(self)
        if isinstance(out, dict) and out.get("support") is None:
            out.pop("support", None)
        return out


@register_init("standard", StandardParams)
def standard(p: StandardParams, key, net: Net, width: int, d: int):
    """Rows w_j ~ N(0, scale^2 I/d) (or on the first ``support`` = k coordinates, N(0, scale^2 I_k/k));
    v_j ~ N(0, scale^2/h) for nets that have v."""
    kW, kv = jax.random.split(key)
    k = d if p.support is None else p.support
    if k > d:
        raise ValueError(f"init.support is {k}, more than the input dimension d = {d}")
    W = p.scale * jax.random.normal(kW, (width, k)) / np.sqrt(k)
    params = {"W": W if k == d else jnp.pad(W, ((0, 0), (0, d - k)))}
    if "v" in net.param_names:
        params["v"] = p.scale * jax.random.normal(kv, (width,)) / np.sqrt(width)
    return params


class FileInitParams(InitParams, FileRef):
    """Parameters from an ``.npz``: ``W`` [h, d] (and ``v`` [h] for two_layer), or with a
    leading seed axis ([S, h, d]) to give each batched seed its own initialization."""

    kind: Literal["file"] = "file"
    given: ClassVar[bool] = True

    def fixed(self) -> dict[str, np.ndarray]:
        return read_init_file(self)

    def field_of(self, array: str) -> str:
        return "init.path"

    @field_validator("path")
    @classmethod
    def _has_W(cls, v: str) -> str:
        arrays = read_npz(v, need=("W",), what=INIT_NEEDS)
        W = arrays["W"]
        if W.ndim not in (2, 3) or 0 in W.shape:
            raise ValueError(f"{v}: W has shape {list(W.shape)}; need [h, d] or [seeds, h, d] with h, d >= 1")
        if "v" in arrays:
            read_npz(v, need=("v",), what=INIT_NEEDS)  # v, when present, must be finite numbers
        return v


INIT_NEEDS = "W [h, d] and, for two_layer, v [h]"


def read_init_file(p: FileInitParams) -> dict[str, np.ndarray]:
    """The arrays ``W`` (and ``v`` when present) of an init file, as float64."""
    arrays = read_npz(p.path, need=("W",), what=INIT_NEEDS)
    return {k: np.asarray(arrays[k], dtype=np.float64) for k in ("W", "v") if k in arrays}


@register_init("file", FileInitParams)
def from_file(p: FileInitParams, key, net: Net, width: int, d: int):
    """The file's ``W`` and ``v`` (the net's parameters), one set or one per seed."""
    arrays = read_init_file(p)
    return {k: jnp.asarray(arrays[k]) for k in net.param_names}


class ValuesInitParams(InitParams):
    """Parameters written in the config itself: ``W`` [h, d] (or [seeds, h, d]) and, for two_layer, ``v``
    [h] (or [seeds, h]); for hand-made initial conditions such as the single neurons of Min et al. App.
    E.3/E.4 (``{kind: values, W: [[0, 1]], v: [1]}``)."""

    kind: Literal["values"] = "values"
    given: ClassVar[bool] = True
    W: list[list[float]] | list[list[list[float]]]
    v: list[float] | list[list[float]] | None = None

    def fixed(self) -> dict[str, np.ndarray]:
        arrays = {"W": np.asarray(self.W, dtype=np.float64)}
        if self.v is not None:
            arrays["v"] = np.asarray(self.v, dtype=np.float64)
        return arrays

    def field_of(self, array: str) -> str:
        return f"init.{array}"

    @field_validator("W")
    @classmethod
    def _rectangular(cls, W):
        shape = np.shape(np.asarray(W, dtype=object))
        if len(shape) not in (2, 3) or 0 in shape:
            raise ValueError(f"W must be [h, d] or [seeds, h, d] with h, d >= 1 (rows of equal length), not {W!r}")
        return W


@register_init("values", ValuesInitParams)
def from_values(p: ValuesInitParams, key, net: Net, width: int, d: int):
    """The config's ``W`` and ``v`` (the net's parameters), one set or one per seed."""
    arrays = p.fixed()
    return {k: jnp.asarray(arrays[k]) for k in net.param_names}


class GaussianSignsParams(InitParams):
    """W entries i.i.d. N(0, scale^2), v_j = +-1 with probability 1/2 (the first-layer-only scheme of
    Min et al. App. A.5; Brutzkus et al. 2018). Use with ``train.layers: first``."""

    kind: Literal["gaussian_signs"] = "gaussian_signs"
    scale: float = Field(default=1e-6, gt=0)


@register_init("gaussian_signs", GaussianSignsParams, nets=("two_layer",))
def gaussian_signs(p: GaussianSignsParams, key, net: Net, width: int, d: int):
    """W entries N(0, scale^2), v_j = +-1 with probability 1/2 (Min et al. App. A.5)."""
    kW, kv = jax.random.split(key)
    return {"W": p.scale * jax.random.normal(kW, (width, d)),
            "v": jnp.where(jax.random.bernoulli(kv, 0.5, (width,)), 1.0, -1.0)}


DRAWS_KEPT_BYTES = 64 * 2**20  # the per-seed draws a process keeps (``sample_seeds``)
_draws: OrderedDict = OrderedDict()  # (sampler, init, net parameters, width, d, x64, key) -> {name: read-only array}
_draws_bytes = [0]
_draws_lock = threading.Lock()  # runs built in threads (a sweep's thread workers) share the kept draws


def _draw(fn, p: InitParams, key, net: Net, width: int, d: int, kept_as: tuple | None) -> dict[str, np.ndarray]:
    """One seed's draw ``fn(p, key, net, width, d)`` as read-only numpy arrays; with ``kept_as`` (``sample_seeds``:
    the sampler, the init's parameters, the net's parameter names, the shape and JAX's default precision) it is kept
    under ``(*kept_as, key)``, least recently used first out past ``DRAWS_KEPT_BYTES``: the premise and falsifier
    worlds of a claim change the training and keep the init, so a process draws the same seeds again and again (91 %
    of the draws of the lyu2021 and min2024 falsifier tests). The sampler is part of the key, so a kind registered
    again under the same name draws afresh."""
    memo = None if kept_as is None else (*kept_as, np.asarray(key).tobytes())
    if memo is not None:
        with _draws_lock:
            if memo in _draws:
                _draws.move_to_end(memo)
                return _draws[memo]
    arrays = {k: np.asarray(v) for k, v in fn(p, key, net, width, d).items()}
    if memo is not None:
        for a in arrays.values():
            a.setflags(write=False)
        with _draws_lock:
            if memo not in _draws:
                _draws[memo] = arrays
                _draws_bytes[0] += sum(a.nbytes for a in arrays.values())
            while _draws_bytes[0] > DRAWS_KEPT_BYTES and len(_draws) > 1:
                _draws_bytes[0] -= sum(a.nbytes for a in _draws.popitem(last=False)[1].values())
    return arrays


def sample_seeds(p: InitParams, keys, net: Net, width: int, d: int, dtype) -> dict:
    """Parameters of every seed in ``dtype``, stacked on a leading axis: ``sample(p, keys[s], ...)``.

    Seeds are drawn one by one (a seed's init does not depend on the others in its batch; ``_draw`` keeps the
    draws a process makes again) and stacked and cast by numpy: eager ``jnp.stack`` / ``astype`` would compile an
    XLA program for every seed count and shape. (Drawing all seeds in one jit(vmap) program was tried: it compiles
    2-3x longer than the eager draws, whose programs are shared by every init of the same shape; a jit of one
    seed's whole draw differs from the eager draw in the last bits.) A ``file`` init with a leading seed axis
    already holds every seed.
    """
    fn = INITS.get(p.kind).fn
    if p.given:  # the same arrays for every seed: read once (and not kept: the file may change between builds)
        per_seed = [_draw(fn, p, keys[0], net, width, d, None)] * len(keys)
    else:
        kept_as = (fn, type(p), p.model_dump_json(), net.param_names, width, d, bool(jax.config.jax_enable_x64))
        per_seed = [_draw(fn, p, key, net, width, d, kept_as) for key in keys]
    if np.ndim(per_seed[0]["W"]) == 3:
        arrays = per_seed[0]
    else:
        arrays = {k: np.stack([ps[k] for ps in per_seed]) for k in per_seed[0]}
    return {k: jnp.asarray(np.asarray(x, dtype=dtype)) for k, x in arrays.items()}
