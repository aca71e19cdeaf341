"""Neuron directions projected on the plane of a paper's two reference directions.

For a reference pair (r_1, r_2) the plane has the orthonormal basis e_1 = r_1/||r_1||,
e_2 = (r_2 - <r_2, e_1> e_1)/||...|| (Gram-Schmidt). The observable ``<plane>`` records, per
neuron, the coordinates (<u_j, e_1>, <u_j, e_2>) of the unit direction u_j = w_j/||w_j|| ([h, 2];
0 for w_j = 0): a neuron lying in the plane sits on the unit circle, one orthogonal to it at the
origin, whatever the scale of the weights (initial scales go down to 1e-12). ``<plane>_refs``
[2, 2] holds the coordinates of r_1/||r_1|| and r_2/||r_2|| in the same basis, so a trajectory
alone draws the picture (``twolayer explore``). When r_2 is parallel to r_1 (symmetric data has
x_- = -x_+) e_2 is the standard basis vector least aligned with e_1, orthogonalized.

Planes: ``neuron_plane_pm`` (x_+, x_-: Min et al. 2024, §2.1), ``neuron_plane_margin`` (w*, mu:
Lyu et al. 2021, the max-margin direction and the data mean of y_i x_i) and ``neuron_plane_targets``
(w*_1, w*_2: the first two target directions of a multi-index target).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from twolayer.numerics import safe_norm
from twolayer.observe.registry import observable
from twolayer.problem import CONTEXT, context_array

PARALLEL = 1e-9  # ||r_2 - <r_2, e_1> e_1|| <= PARALLEL ||r_2||: r_2 counts as parallel to r_1


@dataclass(frozen=True)
class Plane:
    """A reference plane: the labels of its two directions and ``refs(dataset, cfg) -> (r_1, r_2)``."""

    name: str
    labels: tuple[str, str]
    refs: Callable
    doc: str


def _context(name: str, dataset, cfg) -> np.ndarray:
    """A context array as a run builds it (the dataset's own, else its registered provider)."""
    return np.asarray(dataset.context[name] if name in dataset.context else CONTEXT.get(name)(dataset, cfg),
                      dtype=np.float64)


def _target_pair(dataset, cfg):
    dirs = _context("target_dirs", dataset, cfg)
    return dirs[0], (dirs[1] if dirs.shape[0] > 1 else np.zeros_like(dirs[0]))


PLANES = {p.name: p for p in (
    Plane("neuron_plane_pm", ("x+", "x-"), lambda ds, cfg: (_context("x_pos", ds, cfg), _context("x_neg", ds, cfg)),
          "span(x_+, x_-), the sums of the positive and the negative inputs (Min et al. 2024, §2.1)"),
    Plane("neuron_plane_margin", ("w*", "mu"), lambda ds, cfg: (_context("w_star", ds, cfg), _context("mu_bar", ds, cfg)),
          "span(w*, mu), the max-margin linear direction and mu = (1/n) sum_i y_i x_i (Lyu et al. 2021)"),
    Plane("neuron_plane_targets", ("w*1", "w*2"), _target_pair,
          "span(w*_1, w*_2), the first two target directions of the multi-index target"),
)}


def plane_basis(r1, r2) -> tuple[np.ndarray, np.ndarray]:
    """``(basis [2, d], refs [2, 2])``: the Gram-Schmidt basis of span(r1, r2) and the coordinates of
    r1/||r1||, r2/||r2|| in it (module docstring; a zero r2 has coordinates 0)."""
    r1, r2 = np.asarray(r1, dtype=np.float64), np.asarray(r2, dtype=np.float64)
    n1, n2 = np.linalg.norm(r1), np.linalg.norm(r2)
    if not n1 > 0:
        raise ValueError("observe.metrics: the first reference direction of this plane is zero on this data")
    e1 = r1 / n1
    q = r2 - (r2 @ e1) * e1
    if np.linalg.norm(q) <= PARALLEL * max(n2, 1e-300):
        q = np.eye(r1.size)[int(np.argmin(np.abs(e1)))]
        q = q - (q @ e1) * e1
    e2 = q / np.linalg.norm(q)
    basis = np.stack([e1, e2])
    refs = np.stack([[1.0, 0.0], basis @ r2 / n2 if n2 > 0 else [0.0, 0.0]])
    return basis, refs


def _register(plane: Plane) -> None:
    basis_key, refs_key = f"{plane.name}_basis", f"{plane.name}_refs"

    @context_array(basis_key)
    def _basis(dataset, cfg):
        return plane_basis(*plane.refs(dataset, cfg))[0]

    @context_array(refs_key)
    def _refs(dataset, cfg):
        return plane_basis(*plane.refs(dataset, cfg))[1]

    def coordinates(params, ctx):
        W = params["W"]
        norm = safe_norm(W)
        U = W / jnp.where(norm > 0, norm, 1.0)[:, None]
        refs = ctx.arrays[refs_key] + 0.0 * jnp.sum(W[:1, :1])  # keeps the seed axis under vmap
        return {plane.name: U @ ctx.arrays[basis_key].T, refs_key: refs}

    coordinates.__doc__ = (f"(<u_j, e_1>, <u_j, e_2>) per neuron [h, 2], u_j = w_j/||w_j||, on {plane.doc} "
                           f"(``{refs_key}`` [2, 2]: the two reference directions in that basis)")
    observable(plane.name, needs=(basis_key, refs_key),
               dims={plane.name: ("neuron", "plane"), refs_key: ("reference", "plane")})(coordinates)


for _plane in PLANES.values():
    _register(_plane)
