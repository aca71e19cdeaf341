"""Teacher-student data of online SGD (Saad & Solla 1995; Goldt et al. 2019): x ~ N(0, I_d) and

    y = sum_{n<M} v*_n g(w*_n . x) + sigma zeta,   zeta ~ N(0, 1),

in twolayer's parametrization (w*_n = W*_n / sqrt d, so T = w* w*' is O(1); Goldt et al. write g(W*_n.x / sqrt d)).
``teacher`` ``gaussian`` draws W*_n ~ N(0, I_d) (T = I up to O(1/sqrt d)); ``orthogonal`` takes orthonormal rows
times sqrt d (T = I exactly). g is ``activation`` (default erf); the ODEs (``twolayer.theory.online_sgd``) need
the student's activation to be the teacher's, which method ``online_sgd`` checks.

The builder returns a fixed sample of ``n`` points: the training set of the methods that use one (``gd``, ``sgd``:
multi-pass SGD on n = alpha d samples) and the test set of the ``loss`` observable under method ``online_sgd``,
which draws a fresh sample at every step from the context arrays: ``target_dirs`` [M, d] (w*),
``target_coefs`` [M] (v*), ``input_scale`` [d] and ``label_noise`` (sigma).

``spectrum_decay`` beta != 0 makes the input covariance non-isotropic (outside the theory's premise, for the
counterfactuals): x_i = s_i z_i with s_i^2 proportional to i^(-beta), normalized to mean 1 (so tr Sigma = d as
for the identity), i.e. a power-law spectrum, in a coordinate basis that the teacher directions (random) do not
align with.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from twolayer.activations import activation_spec, make_activation
from twolayer.data.registry import DataParams, Dataset, register_dataset
from twolayer.fields import field_errors


class TeacherStudentParams(DataParams):
    """``d`` input dimension, ``teacher_width`` M, ``teacher_weights`` v* (default all 1), ``activation`` g of the
    teacher (default erf), ``noise`` sigma (label-noise standard deviation), ``n`` the fixed sample's size,
    ``teacher`` gaussian | orthogonal, ``spectrum_decay`` beta (0: isotropic inputs, the theory's premise),
    ``seed`` of the teacher and the fixed sample."""

    kind: Literal["teacher_student"] = "teacher_student"
    omitted_defaults: ClassVar[dict[str, Any]] = {"augment": None}
    d: int = Field(default=500, ge=1)
    teacher_width: int = Field(default=2, ge=1)
    teacher_weights: list[float] | None = None
    activation: str | dict = "erf"
    noise: float = Field(default=0.0, ge=0.0)
    n: int = Field(default=1000, ge=1)
    teacher: Literal["gaussian", "orthogonal"] = "gaussian"
    spectrum_decay: float = Field(default=0.0, ge=0.0, le=4.0)
    seed: int = Field(default=0, ge=0)

    @field_validator("activation")
    @classmethod
    def _activation(cls, v):
        return activation_spec(v)

    @model_validator(mode="after")
    def _sizes(self):
        errors = []
        if self.teacher_weights is not None and len(self.teacher_weights) != self.teacher_width:
            errors.append(("teacher_weights", f"has {len(self.teacher_weights)} entries, teacher_width is "
                                              f"{self.teacher_width}"))
        if self.teacher == "orthogonal" and self.teacher_width > self.d:
            errors.append(("teacher_width", f"is {self.teacher_width}: orthogonal teacher rows need teacher_width <= d "
                                            f"= {self.d}"))
        if errors:
            raise field_errors(type(self).__name__, errors)
        return self


def teacher_directions(p: TeacherStudentParams) -> np.ndarray:
    """w* [M, d] with rows of squared norm ~1 (gaussian) or exactly 1 and orthogonal (orthogonal)."""
    rng = np.random.default_rng([p.seed, 29])
    G = rng.normal(size=(p.teacher_width, p.d))
    if p.teacher == "gaussian":
        return G / np.sqrt(p.d)
    Q, R = np.linalg.qr(G.T)
    return (Q * np.sign(np.diag(R))).T


def input_scale(p: TeacherStudentParams) -> np.ndarray:
    """s [d]: x = s * z, s_i^2 proportional to i^(-spectrum_decay) with mean 1 (all ones when isotropic)."""
    lam = np.arange(1, p.d + 1, dtype=np.float64) ** (-p.spectrum_decay)
    return np.sqrt(lam / lam.mean())


def teacher_weights(p: TeacherStudentParams) -> np.ndarray:
    """v* [M]: ``teacher_weights``, or all ones."""
    return np.ones(p.teacher_width) if p.teacher_weights is None else np.asarray(p.teacher_weights, dtype=np.float64)


@register_dataset("teacher_student", TeacherStudentParams)
def build_teacher_student(p: TeacherStudentParams) -> Dataset:
    """A fixed sample of n teacher-labelled Gaussian inputs, and the teacher in the context (module docstring)."""
    W, a, s = teacher_directions(p), teacher_weights(p), input_scale(p)
    g = make_activation(p.activation)
    rng = np.random.default_rng([p.seed, 30])
    X = rng.normal(size=(p.n, p.d)) * s
    y = np.asarray(g(X @ W.T)) @ a + p.noise * rng.normal(size=p.n)
    info = {"teacher_width": p.teacher_width, "noise": p.noise, "spectrum_decay": p.spectrum_decay}
    context = {"target_dirs": W, "target_coefs": a, "input_scale": s, "label_noise": np.float64(p.noise)}
    return Dataset(X, y, info, context)
