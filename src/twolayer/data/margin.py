"""Datasets of Lyu, Li, Wang & Arora (NeurIPS 2021): linearly separable data, symmetric and hinted.

- ``separable_ball``: n points uniform in the unit ball of R^d, kept when |<w_t, x>| > margin for a
  random unit teacher w_t, labelled y = sign <w_t, x> (spec §4 generator, [DEFAULT]).
- ``symmetric_separable``: n/2 such points with y = +1 (x flipped to the positive side) followed by
  their negations with y = -1 (Assumption 4.1 ordering: x_i = -x_{i+n/2}).
- ``hinted``: the (H, K, eps, w_perp)-hinted dataset of Definition 6.1 as reconstructed in spec §3.1
  [RECON]: the hint points (H w*, +1), (eps w* + K w_perp, +1), (eps w* - K w_perp, +1) put first,
  followed by a base separable dataset with max-margin direction w*.
- ``imbalanced_separable``: non-symmetric data meeting Assumptions A.2, A.3 and A.5 [RECON] (Theorem A.7).
- ``augment: symmetric`` (any kind): append (-x_i, -y_i) to the data (the paper's augmentation).
- ``augment: contradict`` (any kind): append (x_1, -y_1), the first point with the other label: no classifier
  fits both copies, so the data are not separable and L >= 2 ln 2 / n for every net (a premise ablation).

Random builders resample until the technical assumption <mu, x_i> != 0 holds (|<mu, x_i>| >= 1e-8);
other data that violate it get a warning. ``info`` records w*, gamma*, ||mu|| and the checks.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from twolayer.data.registry import AUGMENTATIONS, DATASETS, DataParams, Dataset, build_dataset, register_dataset
from twolayer.fields import field_errors
from twolayer.theory.margin import hinted_prechecks, max_margin_linear, mu, mu_dot_x_min

MU_DOT_X_TOL = 1e-8  # spec §1.1: resample when any |<mu, x_i>| is below this
MAX_RESAMPLES = 100


def _margin_info(X, y) -> dict:
    w, g = max_margin_linear(X, y)
    return {"w_star": w.tolist(), "gamma_star": g, "mu_norm": float(np.linalg.norm(mu(X, y))),
            "mu_dot_x_min": mu_dot_x_min(X, y), "n": int(len(y)), "d": int(X.shape[1])}


def _ball_points(rng, d: int, count: int, margin: float):
    """``count`` points uniform in the unit ball with |<w_t, x>| > margin, and the teacher w_t."""
    w_t = rng.normal(size=d)
    w_t /= np.linalg.norm(w_t)
    out = []
    while len(out) < count:
        g = rng.normal(size=(4 * count + 16, d))
        x = g / np.linalg.norm(g, axis=1, keepdims=True) * rng.uniform(size=(len(g), 1)) ** (1 / d)
        out.extend(x[np.abs(x @ w_t) > margin])
    return np.array(out[:count]), w_t


def _resampled(build, seed: int):
    """Call ``build(rng)`` -> (X, y, extra) until <mu, x_i> != 0 for every i (spec §1.1)."""
    rng = np.random.default_rng(seed)
    for attempt in range(MAX_RESAMPLES):
        X, y, extra = build(rng)
        if mu_dot_x_min(X, y) >= MU_DOT_X_TOL:
            return X, y, {**extra, "resamples": attempt}
    raise ValueError(f"could not draw data with <mu, x_i> != 0 in {MAX_RESAMPLES} attempts")


class BallParams(DataParams):
    """Uniform unit-ball points with a teacher margin: d, n, margin (|<w_t, x>| > margin), seed."""

    d: int = Field(default=5, ge=1)
    n: int = Field(default=60, ge=2)
    margin: float = Field(default=0.1, ge=0, lt=1)
    seed: int = Field(default=0, ge=0)


class SeparableBallParams(BallParams):
    """``n`` points uniform in the unit ball of R^d, labelled by a random teacher with margin ``margin``."""

    kind: Literal["separable_ball"] = "separable_ball"


class SymmetricSeparableParams(BallParams):
    """n (even) points: n/2 ball points on the positive side of the teacher, then their negations."""

    kind: Literal["symmetric_separable"] = "symmetric_separable"

    @field_validator("n")
    @classmethod
    def _even(cls, v):
        if v % 2:
            raise ValueError(f"must be even (n/2 pairs x, -x), got {v}")
        return v


@register_dataset("separable_ball", SeparableBallParams)
def separable_ball(p: SeparableBallParams) -> Dataset:
    """Points in the unit ball labelled by a random teacher direction (linearly separable)."""
    def build(rng):
        X, w_t = _ball_points(rng, p.d, p.n, p.margin)
        y = np.sign(X @ w_t)
        return X, y, {"teacher": w_t.tolist()}

    X, y, extra = _resampled(build, p.seed)
    return Dataset(X, y, {**_margin_info(X, y), **extra})


@register_dataset("symmetric_separable", SymmetricSeparableParams)
def symmetric_separable(p: SymmetricSeparableParams) -> Dataset:
    """A separable set and its mirror image (x, y) -> (-x, -y): Lyu et al.'s symmetric data."""
    def build(rng):
        P, w_t = _ball_points(rng, p.d, p.n // 2, p.margin)
        P = P * np.sign(P @ w_t)[:, None]
        return np.vstack([P, -P]), np.concatenate([np.ones(len(P)), -np.ones(len(P))]), {"teacher": w_t.tolist()}

    X, y, extra = _resampled(build, p.seed)
    return Dataset(X, y, {**_margin_info(X, y), **extra, "symmetric": True})


class ImbalancedSeparableParams(DataParams):
    """Non-symmetric separable data for Theorem A.7 (spec §3 A.7 [RECON]): ``n_pos`` ball points with
    margin_pos < <w_t, x> and ``n_neg`` with <w_t, x> < -margin_neg, for a random unit teacher w_t. Many
    positives near the boundary and fewer, farther negatives give ||mu^+|| > ||mu^-|| (A.3) and support
    vectors of {(x_i^+, y_i)} that are all positive (A.5, since x^+ shrinks negatives by alpha). Draws are
    repeated (new points, same teacher) until A.2 (mu^+ classifies every point), A.3 and A.5 hold at the
    Leaky ReLU slope ``check_slope``; ``info`` records the checks and the number of draws."""

    kind: Literal["imbalanced_separable"] = "imbalanced_separable"
    d: int = Field(default=2, ge=1)
    n_pos: int = Field(default=16, ge=1)
    n_neg: int = Field(default=8, ge=1)
    margin_pos: float = Field(default=0.05, ge=0, lt=1)
    margin_neg: float = Field(default=0.4, ge=0, lt=1)
    seed: int = Field(default=0, ge=0)
    check_slope: float = Field(default=0.2, gt=0, lt=1)


def _one_sided(rng, d: int, count: int, w_t, lo: float) -> np.ndarray:
    """``count`` points uniform in the unit ball with <w_t, x> > lo."""
    out = []
    while len(out) < count:
        g = rng.normal(size=(4 * count + 16, d))
        x = g / np.linalg.norm(g, axis=1, keepdims=True) * rng.uniform(size=(len(g), 1)) ** (1 / d)
        out.extend(x[x @ w_t > lo])
    return np.array(out[:count])


@register_dataset("imbalanced_separable", ImbalancedSeparableParams)
def imbalanced_separable(p: ImbalancedSeparableParams) -> Dataset:
    """n_pos + n_neg one-sided ball points for a fixed teacher, redrawn until A.2, A.3 and A.5 hold [RECON]."""
    rng = np.random.default_rng(p.seed)
    w_t = rng.normal(size=p.d)
    w_t /= np.linalg.norm(w_t)
    for attempt in range(MAX_RESAMPLES):
        X = np.vstack([_one_sided(rng, p.d, p.n_pos, w_t, p.margin_pos), -_one_sided(rng, p.d, p.n_neg, w_t, p.margin_neg)])
        y = np.concatenate([np.ones(p.n_pos), -np.ones(p.n_neg)])
        checks = hinted_prechecks(X, y, p.check_slope)
        if (checks["mu_plus_classifies_all"] and checks["A3_mu_plus_larger"] and checks["A5_support_vectors_positive"]
                and mu_dot_x_min(X, y) >= MU_DOT_X_TOL):
            return Dataset(X, y, {**_margin_info(X, y), "teacher": w_t.tolist(), "resamples": attempt,
                                  "assumptions": checks, "reconstructed": "Assumptions A.2-A.5"})
    raise ValueError(f"no draw met A.2, A.3 and A.5 in {MAX_RESAMPLES} attempts (lower margin_pos, raise "
                     "margin_neg or n_pos)")


@AUGMENTATIONS.register("symmetric")
def augment_symmetric(data: Dataset) -> Dataset:
    """(x, y) -> {(x, y), (-x, -y)}: the data augmentation that makes any dataset symmetric [SEED]."""
    X = np.vstack([data.X, -data.X])
    y = np.concatenate([data.y, -data.y])
    low = mu_dot_x_min(X, y)
    if low < MU_DOT_X_TOL:
        warnings.warn(f"augment symmetric: min_i |<mu, x_i>| = {low:.3g} < {MU_DOT_X_TOL:g}; the technical "
                      "assumption <mu, x_i> != 0 of Lyu et al. (2021) fails", stacklevel=2)
    return Dataset(X, y, {**data.info, "augment": "symmetric", "symmetric": True, "mu_dot_x_min": low},
                   dict(data.context))


@AUGMENTATIONS.register("contradict")
def augment_contradict(data: Dataset) -> Dataset:
    """(x_1, y_1) -> also (x_1, -y_1): the first point again with the other label. No classifier (linear or not)
    fits both copies, so the data are not separable and the mean loss of any net is at least 2 ln 2 / n."""
    X = np.vstack([data.X, data.X[:1]])
    y = np.concatenate([data.y, -data.y[:1]])
    return Dataset(X, y, {**data.info, "augment": "contradict", "separable": False, "n": int(len(y))},
                   dict(data.context))


class HintedParams(DataParams):
    """Definition 6.1 as reconstructed in spec §3.1 [RECON]: hint points (H w*, +1),
    (eps w* + K w_perp, +1), (eps w* - K w_perp, +1) before a separable ``base`` dataset.

    ``eps`` defaults to ``eps_scale * gamma*_S`` (spec E6: eps = alpha gamma*_S / 4, i.e. 0.05 at
    alpha = 0.2; the regime needs 0 < eps < alpha gamma*_S). ``w_perp`` defaults to w* rotated by +90
    degrees in d = 2, else the normalized projection of the first basis vector not parallel to w*.
    ``hint_labels`` makes the labels of the three hint points configurable (spec A6).
    ``precheck_slope`` is the Leaky ReLU slope used for the pre-checks recorded in ``info``.
    """

    kind: Literal["hinted"] = "hinted"
    base: Any = Field(default={"kind": "separable_ball", "d": 2, "n": 20}, validate_default=True)
    H: float = Field(default=1000.0, gt=0)
    K: float = Field(default=1.0, gt=0)
    eps: float | None = Field(default=None, gt=0)
    eps_scale: float = Field(default=0.05, gt=0)
    w_perp: list[float] | None = None
    hint_labels: tuple[Literal[-1, 1], Literal[-1, 1], Literal[-1, 1]] = (1, 1, 1)
    precheck_slope: float = Field(default=0.2, ge=0, lt=1)

    @field_validator("base", mode="before")
    @classmethod
    def _base(cls, v):
        if isinstance(v, DataParams):
            return v
        if isinstance(v, str):
            v = {"kind": v}
        if not isinstance(v, dict) or v.get("kind") not in DATASETS:
            raise ValueError(f"needs a data mapping with kind one of {', '.join(DATASETS.names())}")
        if v["kind"] == "hinted":
            raise ValueError("a hinted dataset cannot be the base of another")
        return DATASETS.get(v["kind"]).params.model_validate(v)

    @model_validator(mode="after")
    def _w_perp(self):
        if self.w_perp is not None and not np.linalg.norm(self.w_perp) > 0:
            raise field_errors(type(self).__name__, [("w_perp", "must be a non-zero vector")])
        return self


def _default_perp(w_star: np.ndarray) -> np.ndarray:
    if len(w_star) == 2:
        return np.array([-w_star[1], w_star[0]])
    for e in np.eye(len(w_star)):
        v = e - (e @ w_star) * w_star
        if np.linalg.norm(v) > 1e-3:
            return v / np.linalg.norm(v)
    raise ValueError("no direction orthogonal to w*")


@register_dataset("hinted", HintedParams)
def hinted(p: HintedParams) -> Dataset:
    """A symmetric separable base set plus hint points that make the max-margin classifier sub-optimal
    among linear ones (Lyu et al. §5, Fig. 1 right).
    """
    base = build_dataset(p.base)
    w_star, g_star = max_margin_linear(base.X, base.y)
    if p.w_perp is None:
        w_perp = _default_perp(w_star)
    else:
        w_perp = np.asarray(p.w_perp, dtype=np.float64)
        if w_perp.shape != w_star.shape:
            raise ValueError(f"data.w_perp has {w_perp.size} entries, the base data have d = {w_star.size}")
        w_perp = w_perp - (w_perp @ w_star) * w_star
        if np.linalg.norm(w_perp) < 1e-12:
            raise ValueError("data.w_perp is parallel to w* of the base data")
        w_perp = w_perp / np.linalg.norm(w_perp)
    eps = p.eps if p.eps is not None else p.eps_scale * g_star
    hints = np.array([p.H * w_star, eps * w_star + p.K * w_perp, eps * w_star - p.K * w_perp])
    X = np.vstack([hints, base.X])
    y = np.concatenate([np.asarray(p.hint_labels, dtype=np.float64), base.y])
    checks = hinted_prechecks(X, y, p.precheck_slope)
    failed = [k for k in ("mu_plus_classifies_all", "A3_mu_plus_larger", "A5_support_vectors_positive") if not checks[k]]
    if failed:
        warnings.warn(f"hinted data: pre-check(s) {', '.join(failed)} fail (spec §3.1; raise H, or lower eps)",
                      stacklevel=2)
    low = mu_dot_x_min(X, y)
    if low < MU_DOT_X_TOL:
        warnings.warn(f"hinted data: min_i |<mu, x_i>| = {low:.3g}; <mu, x_i> != 0 fails", stacklevel=2)
    info = {**_margin_info(X, y), "base_w_star": w_star.tolist(), "base_gamma_star": g_star,
            "w_perp": w_perp.tolist(), "eps": float(eps), "prechecks": checks, "reconstructed": "Definition 6.1"}
    return Dataset(X, y, info, dict(base.context))
