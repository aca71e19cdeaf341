"""The Gaussian multi-index dataset of the multi-index paper (eq. 1): x ~ N(0, I_d) and

    f*(x) = sum_{j<=r} c_j sigma(w*_j . x),   w*_j orthonormal (default e_1..e_r), c_j = 1 by default.

``overlap`` rho != 0 makes the directions non-orthogonal (outside the paper's assumption, for its
assumption-broken experiment): w*_j are then the rows of ((1 - rho) I + rho 11')^{1/2} in the first r
``target_basis`` rows, unit vectors with <w*_i, w*_j> = rho for i != j spanning the same subspace. The
symmetrized observables (the group acts on ``target_basis`` coordinates) assume orthonormal directions.

``sigma`` is ``data.activation`` (default abs), which must equal ``model.activation`` (the paper's
realizable setting) whenever the exact population machinery is used.
The builder returns a fixed training set (n samples, noiseless) for ``objective: empirical`` and a
held-out test set (``n_test`` samples) for a Monte Carlo test estimate; ``objective: population``
uses the exact Gaussian expectation instead (``twolayer.population``). Dataset context arrays:
``target_basis`` [d, d] (orthonormal, first r rows = w*_j, the rest span the irrelevant complement: the
basis the symmetry group acts in), ``X_test``/``y_test``, and the analysis thresholds
``align_threshold``/``found_threshold`` (scalars). ``target_dirs`` [r, d] and ``target_coefs`` [r] come from
providers that also check the target is realizable (``data.activation == model.activation``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from twolayer.data.registry import DataParams, Dataset, register_dataset
from twolayer.fields import field_errors
from twolayer.problem import context_array
from twolayer import population  # noqa: F401  (registers the exact 'population' objective)


class MultiIndexParams(DataParams):
    """``d`` input dimension, ``r`` target directions (``r <= d``), ``n`` training samples (only
    read by the empirical objective), ``n_test`` held-out samples, ``directions`` ``standard``
    (e_1..e_r) or ``random`` (QR of a Gaussian matrix, drawn from ``seed``), ``coefs`` c_j (default
    all 1), ``activation`` sigma of the target (default abs; must equal ``model.activation`` for the
    exact population objective and observables, which is checked), ``overlap`` rho the pairwise
    <w*_i, w*_j> (default 0: orthonormal, the paper's setting), analysis thresholds
    ``align_threshold`` (neuron i is aligned when max_j <u_i, w*_j>^2 >= it; paper Fig. 1 right panel)
    and ``found_threshold`` (direction j is found when some neuron has <u_i, w*_j>^2 >= it)."""

    kind: Literal["multi_index"] = "multi_index"
    omitted_defaults: ClassVar[dict[str, Any]] = {"augment": None, "overlap": 0.0}
    d: int = Field(default=100, ge=1)
    r: int = Field(default=20, ge=1)
    n: int = Field(default=50_000, ge=1)
    n_test: int = Field(default=10_000, ge=1)
    directions: Literal["standard", "random"] = "standard"
    overlap: float = Field(default=0.0, ge=0.0, lt=1.0)
    coefs: list[float] | None = None
    activation: str | dict = "abs"
    seed: int = Field(default=0, ge=0)
    align_threshold: float = Field(default=0.9, gt=0, le=1)
    found_threshold: float = Field(default=0.99, gt=0, le=1)

    @model_validator(mode="after")
    def _sizes(self):
        if self.r > self.d:
            raise field_errors(type(self).__name__, [("r", f"is {self.r}, more than d = {self.d}")])
        if self.coefs is not None and len(self.coefs) != self.r:
            raise field_errors(type(self).__name__, [("coefs", f"has {len(self.coefs)} entries, r is {self.r}")])
        return self


def target_basis(p: MultiIndexParams) -> np.ndarray:
    """An orthonormal basis [d, d] whose first r rows are the target directions."""
    if p.directions == "standard":
        return np.eye(p.d)
    rng = np.random.default_rng([p.seed, 7])
    Q, R = np.linalg.qr(rng.normal(size=(p.d, p.d)))
    return (Q * np.sign(np.diag(R))).T


def target_directions(p: MultiIndexParams) -> np.ndarray:
    """The target directions w*_j [r, d]: the first r basis rows, mixed to pairwise overlap ``p.overlap``."""
    first = target_basis(p)[: p.r]
    if p.overlap == 0.0:
        return first
    rho = p.overlap
    root = np.sqrt(1 - rho) * np.eye(p.r) + (np.sqrt(1 - rho + p.r * rho) - np.sqrt(1 - rho)) / p.r
    return root @ first  # Gram matrix (1 - rho) I + rho 11'


def target_function(p: MultiIndexParams, activation):
    """``X -> f*(X)`` (numpy) for the given activation."""
    from twolayer.activations import make_activation

    act = make_activation(activation)
    Ws = target_directions(p)
    cs = target_coefs(p)
    return lambda X: np.asarray(act(np.asarray(X @ Ws.T))) @ cs


def target_coefs(p: MultiIndexParams) -> np.ndarray:
    """c*_j of the target f*(x) = sum_j c*_j sigma(<w*_j, x>) (default all ones)."""
    return np.ones(p.r) if p.coefs is None else np.asarray(p.coefs, dtype=np.float64)


@register_dataset("multi_index", MultiIndexParams, population=True)
def multi_index(p: MultiIndexParams) -> Dataset:
    """Gaussian inputs, noiseless target sum_j c_j sigma(w*_j.x) with sigma = ``data.activation``."""
    basis = target_basis(p)
    f = target_function(p, p.activation)
    rng = np.random.default_rng([p.seed, 1])
    X = rng.normal(size=(p.n, p.d))
    X_test = np.random.default_rng([p.seed, 2]).normal(size=(p.n_test, p.d))
    context = {
        "target_basis": basis,
        "X_test": X_test, "y_test": f(X_test),
        "align_threshold": np.float64(p.align_threshold), "found_threshold": np.float64(p.found_threshold),
    }
    info = {"d": p.d, "r": p.r, "n": p.n, "directions": p.directions, "overlap": p.overlap}
    return Dataset(X, f(X), info, context)



def _multi_index_params(cfg, name: str) -> MultiIndexParams:
    """The run's multi_index parameters, checking the target is realizable by the model."""
    from twolayer.activations import make_activation

    if not isinstance(cfg.data, MultiIndexParams):
        raise ValueError(f"context array {name!r} (exact population quantities) needs data.kind multi_index, "
                         f"not {cfg.data.kind!r}")
    if make_activation(cfg.data.activation) != make_activation(cfg.model.activation):
        raise ValueError(f"data.activation {cfg.data.activation!r} must equal model.activation "
                         f"{cfg.model.activation!r} for the exact population loss and its observables")
    if cfg.objective == "population" and cfg.loss.kind != "square":
        raise ValueError(f"objective population is the square loss 1/2 E(f - f*)^2; loss.kind is {cfg.loss.kind!r}")
    return cfg.data


@context_array("target_dirs")
def _target_dirs(dataset, cfg) -> np.ndarray:
    """Rows w*_j [r, d] of the multi-index target."""
    p = _multi_index_params(cfg, "target_dirs")
    return target_directions(p)


@context_array("target_coefs")
def _target_coefs(dataset, cfg) -> np.ndarray:
    """Output weights c_j [r] of the multi-index target."""
    return target_coefs(_multi_index_params(cfg, "target_coefs"))
