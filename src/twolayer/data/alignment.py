"""Datasets of Min, Mallada & Vidal (ICLR 2024), "Early neuron alignment": orthogonally separable data.

- ``toy2d``: unit-norm points in the plane at given angles (default TOY-A of the spec, Fig. 6:
  positives at 20, 35, 50 degrees, negatives at 240, 255 degrees; mu = cos 55 deg).
- ``orthogonal``: n <= d points x_i = r_i e_i (Fig. 9: e_1, e_2 both positive; mu = 0).
- ``separable_cap``: n random points in d dimensions with y_i x_i in a spherical cap of
  half-angle beta = arccos(mu)/2 around a random centre, so that mu(X, y) >= mu (Assumption 1).

``two_points`` (Figs. 7-8) lives in ``data/synthetic.py``. Every builder records the measured
separability ``mu`` (Assumption 1) in ``info``.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from twolayer.data.registry import DataParams, Dataset, register_dataset
from twolayer.fields import field_errors


def _info(X, y, **extra) -> dict:
    from twolayer.theory.alignment import separability

    return {"mu": float(separability(X, y)), "n_pos": int(np.sum(y > 0)), "n_neg": int(np.sum(y < 0)), **extra}


class Toy2dParams(DataParams):
    """Points r_i [cos a_i, sin a_i] with angles in degrees; labels +1 for ``pos_angles``, -1 for
    ``neg_angles``; ``radii`` (one per point, positives first) default to 1."""

    kind: Literal["toy2d"] = "toy2d"
    pos_angles: tuple[float, ...] = (20.0, 35.0, 50.0)
    neg_angles: tuple[float, ...] = (240.0, 255.0)
    radii: tuple[float, ...] | None = None

    @model_validator(mode="after")
    def _check(self):
        n = len(self.pos_angles) + len(self.neg_angles)
        if n == 0:
            raise field_errors(type(self).__name__, [("pos_angles", "needs at least one point (pos_angles or "
                                                                    "neg_angles)")])
        if self.radii is not None and (len(self.radii) != n or min(self.radii) <= 0):
            raise field_errors(type(self).__name__, [("radii", f"must be {n} positive numbers (positives first), "
                                                               f"got {list(self.radii)}")])
        return self


@register_dataset("toy2d", Toy2dParams)
def toy2d(p: Toy2dParams) -> Dataset:
    """Points on the unit circle (or at ``radii``) at ``pos_angles`` (label +1) and ``neg_angles`` (-1): TOY-A."""
    angles = np.deg2rad(np.array([*p.pos_angles, *p.neg_angles], dtype=np.float64))
    r = np.ones_like(angles) if p.radii is None else np.asarray(p.radii, dtype=np.float64)
    X = r[:, None] * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    y = np.array([1.0] * len(p.pos_angles) + [-1.0] * len(p.neg_angles))
    return Dataset(X, y, _info(X, y))


class OrthogonalParams(DataParams):
    """x_i = r_i e_i in R^d for i < n (n <= d); labels default to all +1 (Min et al. Fig. 9)."""

    kind: Literal["orthogonal"] = "orthogonal"
    n: int = Field(default=2, ge=1)
    d: int | None = Field(default=None, ge=1)
    labels: tuple[Literal[-1, 1], ...] | None = None
    radii: tuple[float, ...] | None = None

    @model_validator(mode="after")
    def _check(self):
        errors = []
        if self.d is not None and self.d < self.n:
            errors.append(("d", f"is {self.d} < n = {self.n}: orthogonal points need n <= d"))
        for name in ("labels", "radii"):
            val = getattr(self, name)
            if val is not None and len(val) != self.n:
                errors.append((name, f"must have n = {self.n} entries, got {len(val)}"))
        if self.radii is not None and min(self.radii) <= 0:
            errors.append(("radii", "must be positive"))
        if errors:
            raise field_errors(type(self).__name__, errors)
        return self


@register_dataset("orthogonal", OrthogonalParams)
def orthogonal(p: OrthogonalParams) -> Dataset:
    """n orthogonal points e_i (scaled by ``radii``), every label +1: mu = 0."""
    d = p.n if p.d is None else p.d
    r = np.ones(p.n) if p.radii is None else np.asarray(p.radii, dtype=np.float64)
    X = np.zeros((p.n, d))
    X[np.arange(p.n), np.arange(p.n)] = r
    y = np.ones(p.n) if p.labels is None else np.asarray(p.labels, dtype=np.float64)
    return Dataset(X, y, _info(X, y))


class SeparableCapParams(DataParams):
    """n points in R^d: y_i x_i = rho_i u_i with unit u_i uniform in the cap cos(u, c) >= cos(beta),
    beta = arccos(mu)/2 (so Assumption 1 holds with mu(X, y) >= mu), rho_i uniform in ``radii``,
    labels +1 with probability ``pos_fraction`` (at least one of each when ``pos_fraction`` is in
    (0, 1)). ``seed`` fixes the data (independent of the run's init seed)."""

    kind: Literal["separable_cap"] = "separable_cap"
    n: int = Field(default=20, ge=1)
    d: int = Field(default=10, ge=2)
    mu: float = Field(default=0.5, ge=0.0, lt=1.0)
    radii: tuple[float, float] = (1.0, 1.0)
    pos_fraction: float = Field(default=0.5, ge=0.0, le=1.0)
    seed: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _check(self):
        if not 0 < self.radii[0] <= self.radii[1]:
            raise field_errors(type(self).__name__, [("radii", f"must be 0 < min <= max, got {list(self.radii)}")])
        return self


def sample_cap(rng: np.random.Generator, n: int, d: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """(centre c, [n, d] unit vectors uniform in the cap {u : angle(u, c) <= beta}), by rejection
    on the polar angle (density proportional to sin^(d-2) of the angle)."""
    c = rng.normal(size=d)
    c /= np.linalg.norm(c)
    angles = np.empty(0)
    while angles.size < n:
        a = beta * rng.random(4 * n)
        keep = rng.random(4 * n) <= (np.sin(a) / max(np.sin(beta), 1e-300)) ** (d - 2) if beta > 0 else np.ones(4 * n, bool)
        angles = np.concatenate([angles, a[keep]])
    angles = angles[:n]
    r = rng.normal(size=(n, d))
    r -= (r @ c)[:, None] * c  # directions orthogonal to c
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    return c, np.cos(angles)[:, None] * c + np.sin(angles)[:, None] * r


@register_dataset("separable_cap", SeparableCapParams)
def separable_cap(p: SeparableCapParams) -> Dataset:
    """Points in a spherical cap of half-angle arccos(mu)/2 around a random centre, signed by their labels,
    so the data satisfy Assumption 1 with separability ``mu``.
    """
    rng = np.random.default_rng(p.seed)
    beta = 0.5 * math.acos(p.mu)
    c, U = sample_cap(rng, p.n, p.d, beta)
    y = np.where(rng.random(p.n) < p.pos_fraction, 1.0, -1.0)
    if 0 < p.pos_fraction < 1 and p.n >= 2 and abs(y.sum()) == p.n:
        y[0] = -y[0]
    rho = rng.uniform(p.radii[0], p.radii[1], size=p.n)
    X = (y * rho)[:, None] * U
    return Dataset(X, y, _info(X, y, target_mu=p.mu, half_angle=beta))
